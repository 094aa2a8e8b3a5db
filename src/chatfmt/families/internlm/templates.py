"""InternLM families: InternLM2/2.5 and InternLM3 (native), and LMDeploy's InternLM v1 templates.

InternLM2 (seed: InternLM2 chat format) is ChatML plus an ``environment`` role, named
system turns for tools (``system name=<|plugin|>`` / ``system name=<|interpreter|>``),
``user name=file`` attachments and in-turn actions
``<|action_start|><|plugin|>\\n{json}<|action_end|>`` /
``<|action_start|><|interpreter|>\\n```python\\nCODE\\n```<|action_end|>\\n``.

Plain chat is byte-identical to ``internlm-internlm2-chat-7b.jinja``, which starts
with ``{{ bos_token }}``: the ``bos_token`` option (default ``<s>``) is that value;
pass ``bos_token=""`` when the tokenizer adds BOS itself.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import TemplateError, UnsupportedFeatureError
from ...protocol import Conversation, Message, Tool, ToolCall
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template
from ..chatml.markers import IM_END, IM_START
from .lagent import LAGENT_0_2_4_API_PREFIX, LAGENT_0_2_4_PARAMETER_DESCRIPTION
from .markers import ACTION_END, ACTION_START, BOS, EOA, EOH, EOS, INTERPRETER, PLUGIN
from .parser import InternLM2Parser

# --------------------------------------------------------------------------- prompts
#: The code-interpreter system prompt of the InternLM2 chat-format seed (English).
INTERPRETER_PROMPT = (
    "You now have access to a Jupyter notebook environment supporting Python code execution. "
    "Just send code to python to run in this stateful environment. This feature is suitable for:\n"
    "- Data analysis or processing (such as data manipulation and graphic creation)\n"
    "- Complex calculations (such as math and physics problems)\n"
    "- Programming examples (for understanding programming concepts or language features)\n"
    "- Text processing and analysis (including text analysis and natural language processing)\n"
    "- Machine learning and data science (model training and data visualization)\n"
    "- File operations and data import (handling CSV, JSON, etc. formats)"
)

#: The meta prompt the InternLM2 seed prints for lagent's ``internlm2_agent.META_INS`` (seed
#: 003, the API docs of a lagent release before 0.2.4). lagent 0.2.4 ships another text:
#: :data:`.lagent.LAGENT_0_2_4_META_CN` (without the English sentence).
SEED_META_INS = (
    "You are InternLM, a large language model trained by PJLab. Answer as concisely as possible. "
    "当开启工具以及代码时，根据需求选择合适的工具进行调用"
)

#: The code-interpreter prompt the InternLM2 seed prints for lagent's ``INTERPRETER_CN``
#: (seed 003). lagent 0.2.4's ``INTERPRETER_CN`` is another text altogether
#: (:data:`.lagent.LAGENT_0_2_4_INTERPRETER_CN`).
SEED_INTERPRETER_CN = (
    "你现在可以通过如下格式向 Jupyter Notebook 发送并执行代码:\n"
    "<|action_start|><|interpreter|>```python\n\n代码\n\n```\n\n"
    "当遇到以下问题时,请使用上述格式调用 Jupyter Notebook 去解决,并根据执行结果做出友好的回复:\n"
    "1. 文件操作和数据导入,比如处理CSV、JSON等格式文件\n"
    "2. 数据分析或处理,比如数据操作或图像绘制如折线图、柱状图等\n"
    "3. 数学相关的问题。当遇到数学问题时,你需要分析题目,并给出代码去解决这个题目"
)

#: The plugin prompt the InternLM2 seed prints for lagent's ``PLUGIN_CN`` (seed 003): a
#: ``str.format`` string with ``{prompt}``. lagent 0.2.4's has no usage lines and full-width
#: punctuation (:data:`.lagent.LAGENT_0_2_4_PLUGIN_CN`).
SEED_PLUGIN_CN = (
    "你可以使用如下工具:\n{prompt}\n当你需要使用工具时,你可以使用如下格式:\n"
    '<|action_start|><|plugin|>{{"name": "工具名称", "parameters": {{参数}}}}\n'
    "如果你已经获得足够信息,请直接给出答案. 避免不必要的工具调用! 同时注意你可以使用的工具,不要随意捏造!"
)

#: The tool-description head the InternLM2 seed prints for lagent's ``API_PREFIX`` (seed
#: 003; a ``str.format`` string with ``{tool_name}`` and ``{description}``). lagent 0.2.4's
#: ends ``is: \n`` (:data:`.lagent.LAGENT_0_2_4_API_PREFIX`).
SEED_API_PREFIX = (
    "This is the subfunction for tool '{tool_name}', you can use this tool. "
    "The description of this function is:\n{description}"
)

#: Old names of the ``SEED_*`` texts (deprecated: they are the seed's printout, not lagent's).
_DEPRECATED = {
    "LAGENT_META_INS": "SEED_META_INS",
    "LAGENT_INTERPRETER_CN": "SEED_INTERPRETER_CN",
    "LAGENT_PLUGIN_CN": "SEED_PLUGIN_CN",
    "LAGENT_API_PREFIX": "SEED_API_PREFIX",
}


def __getattr__(name: str) -> Any:
    new = _DEPRECATED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"{name} is deprecated: it is the InternLM2 seed's text, now {new}; lagent 0.2.4's "
        "own texts are in chatfmt.families.internlm.lagent",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]


#: Default system prompt of LMDeploy's InternLM templates (v1 ``meta_instruction``).
INTERNLM_META_INSTRUCTION = (
    "You are an AI assistant whose name is InternLM (书生·浦语).\n"
    "- InternLM (书生·浦语) is a conversational language model that is developed by Shanghai AI "
    "Laboratory (上海人工智能实验室). It is designed to be helpful, honest, and harmless.\n"
    "- InternLM (书生·浦语) can understand and communicate fluently in the language chosen by "
    "the user such as English and 中文.\n"
)


# --------------------------------------------------------------------------- JSON layout
def seed_json(value: Any, *, indent: int = 4, width: int = 88) -> str:
    """JSON laid out like the seeds' tool lists (black style, valid JSON).

    A list/object is written on one line when that line (indent, key, value and a
    trailing comma) fits in ``width`` columns, otherwise one item per line indented
    by ``indent``. Reproduces the tool lists of the InternLM2 and ChatGLM3 seeds
    (minus their invalid trailing commas).
    """

    def dump(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False)

    def fmt(v: Any, level: int, prefix: int, trailing: int) -> str:
        one = dump(v)
        if not isinstance(v, (dict, list)) or not v:
            return one
        if level * indent + prefix + len(one) + trailing <= width:
            return one
        pad = " " * ((level + 1) * indent)
        if isinstance(v, dict):
            items = [
                pad + dump(k) + ": " + fmt(x, level + 1, len(dump(k)) + 2, 1) for k, x in v.items()
            ]
            opening, closing = "{", "}"
        else:
            items = [pad + fmt(x, level + 1, 0, 1) for x in v]
            opening, closing = "[", "]"
        return opening + "\n" + ",\n".join(items) + "\n" + " " * (level * indent) + closing

    return fmt(value, 0, 0, 0)


def tools_json(functions: list[Any], style: str) -> str:
    """Serialize tool definitions: ``seed`` (seed layout), ``indent4``, ``compact`` or
    ``lagent`` (as lagent 0.2.4's ``Internlm2Protocol`` describes its tools)."""
    if style == "seed":
        return seed_json(functions)
    if style == "indent4":
        return json.dumps(functions, ensure_ascii=False, indent=4)
    if style == "compact":
        return json.dumps(functions, ensure_ascii=False)
    if style == "lagent":
        described = [lagent_description(f) for f in functions]
        return json.dumps(described, ensure_ascii=False, indent=4)
    raise TemplateError(
        f"tools_json must be 'seed', 'indent4', 'compact' or 'lagent', got {style!r}"
    )


#: lagent's parameter types (from Python annotations) for JSON-schema types.
_LAGENT_TYPES = {"integer": "NUMBER", "number": "FLOAT", "boolean": "BOOLEAN", "array": "Array"}


def lagent_description(function: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI ``function`` object as lagent 0.2.4's ``Internlm2Protocol`` describes a tool:
    ``API_PREFIX`` before the description (the tool name before a dot is the toolkit's),
    only the required parameters, each as ``{"name", "type", "description"}``."""
    name = str(function.get("name", ""))
    schema = function.get("parameters") or {}
    props = schema.get("properties") or {}
    required = [str(k) for k in schema.get("required") or ()]
    params = []
    for key in required:
        prop = props.get(key) or {}
        kind = prop.get("type")
        params.append(
            {
                "name": key,
                "type": _LAGENT_TYPES.get(kind, "STRING") if isinstance(kind, str) else "STRING",
                "description": str(prop.get("description", "")),
            }
        )
    return {
        "name": name,
        "description": LAGENT_0_2_4_API_PREFIX.format(
            tool_name=name.split(".")[0], description=function.get("description", "")
        ),
        "parameters": params,
        "required": required,
        "parameter_description": LAGENT_0_2_4_PARAMETER_DESCRIPTION,
    }


def function_objects(tools: tuple[Tool, ...]) -> list[Any]:
    """The ``function`` objects of the function tools, as the caller wrote them."""
    return [t.function for t in tools if t.type == "function"]


# --------------------------------------------------------------------------- InternLM2
_IM_START, _IM_END = IM_START, IM_END
_ACTION_START, _ACTION_END = ACTION_START, ACTION_END
_PLUGIN, _INTERPRETER = PLUGIN, INTERPRETER
_SUB_NAMES = {"plugin": _PLUGIN, "interpreter": _INTERPRETER}


def _call_kind(call: ToolCall) -> str:
    return "interpreter" if call.is_code else "plugin"


def _plugin_call_text(call: ToolCall) -> str:
    """``{"name": …, "parameters": …}`` with the arguments as written, the object around them
    laid out as they are (a model writes one layout for the whole call: what it wrote renders
    back byte for byte; JSON's default layout when the arguments show none)."""
    item, key = json_separators(call.arguments_json) or (", ", ": ")
    name = json.dumps(call.name, ensure_ascii=False)
    return "{" + f'"name"{key}{name}{item}"parameters"{key}' + call.arguments_json + "}"


def json_separators(text: str) -> tuple[str, str] | None:
    """The ``(item, key)`` separators of one-line JSON ``text`` as :func:`json.dumps` takes
    them: ``(", ", ": ")`` or ``(",", ":")``; ``None`` when the text shows neither (no key,
    whitespace of its own, or a mix)."""
    seps: set[tuple[str, str]] = set()
    in_string = escaped = False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "\n":
            return None
        elif c in ",:":
            spaced = text[i + 1 : i + 2] == " "
            seps.add((c, " " if spaced else ""))
    keys = {after for c, after in seps if c == ":"}
    items = {after for c, after in seps if c == ","}
    if len(keys) != 1 or len(items) > 1 or (items and items != keys):
        return None
    after = keys.pop()
    return "," + after, ":" + after


class InternLM2Template(Template):
    """InternLM2 / InternLM2.5 chat: ChatML with BOS, tools, code interpreter, file attachments.

    Tools go in named system turns after the leading system messages: the code
    interpreter (a ``{"type": "code_interpreter"}`` tool) first, then the function
    tools as a JSON list. Assistant tool calls become actions inside the assistant
    turn; tool results become ``environment`` turns named after the call they
    answer (by ``tool_call_id``, else the latest call).

    Action endings follow the seed: a plugin action is ``…<|action_end|>`` directly
    followed by ``<|im_end|>`` (as LMDeploy writes it; ``plugin_newline=True`` adds the
    newline lagent 0.2.4 writes there); an interpreter action ends ``<|action_end|>\\n``
    (as in the seed's interpreter example, lagent's protocol and LMDeploy's tests). A plugin
    call's JSON keeps the arguments as written and lays the object around them out the same
    way, so a parsed reply renders back as the model wrote it.
    """

    name = "internlm2"
    aliases: tuple[str, ...] = ("internlm2.5", "internlm2_5", "internlm2-chat", "internlm2_5-chat")
    model_ids: tuple[str, ...] = (
        "internlm/internlm2-chat-7b",
        "internlm/internlm2-chat-20b",
        "internlm/internlm2-chat-1_8b",
        "internlm/internlm2-chat-7b-sft",
        "internlm/internlm2-chat-20b-sft",
        "internlm/internlm2-chat-1_8b-sft",
        "internlm/internlm2_5-7b-chat",
        "internlm/internlm2_5-20b-chat",
        "internlm/internlm2_5-1_8b-chat",
        "internlm/internlm2_5-7b-chat-1m",
    )
    model_patterns: tuple[str, ...] = (r"^internlm2(?:[._]5)?-.*chat",)
    generation_config = GenerationConfig(
        session_len=32768,
        stop_words=(IM_END,),
        tool_stop_words=(ACTION_END,),
    )
    description = "InternLM2/2.5 chat: ChatML + BOS, plugin/interpreter tools, environment role."
    source = (
        "official Jinja: internlm-internlm2-chat-7b.jinja; seed: InternLM2 chat format; LMDeploy"
    )
    supports_tools = True
    control_tokens: tuple[str, ...] = (
        IM_START,
        IM_END,
        ACTION_START,
        ACTION_END,
        INTERPRETER,
        PLUGIN,
        BOS,
        EOS,
    )
    official_templates: tuple[str, ...] = ("internlm-internlm2-chat-7b.jinja",)
    tool_parser_class = InternLM2Parser
    default_options: ClassVar[Mapping[str, Any]] = {
        "bos_token": BOS,
        "interpreter_prompt": INTERPRETER_PROMPT,
        "plugin_prompt": "{prompt}\n",
        "tools_json": "seed",
        "plugin_newline": False,
    }

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        b.control(str(ctx.option("bos_token") or ""))
        msgs = conv.messages
        lead = 0
        while lead < len(msgs) and msgs[lead].role == "system":
            lead += 1
        kinds = _result_kinds(msgs)
        newline = bool(ctx.option("plugin_newline"))
        for m in msgs[:lead]:
            self._message(b, m, kinds, newline)
        self._tool_turns(b, conv, ctx)
        for m in msgs[lead:]:
            self._message(b, m, kinds, newline)
        if ctx.add_generation_prompt:
            b.control(f"{_IM_START}assistant\n")
        return b.segments

    def _tool_turns(self, b: SegmentBuilder, conv: Conversation, ctx: RenderContext) -> None:
        if conv.has_code_interpreter:
            b.control(
                f"{_IM_START}system name={_INTERPRETER}\n{ctx.option('interpreter_prompt')}{_IM_END}\n"
            )
        functions = function_objects(conv.tools)
        if not functions:
            return
        text = tools_json(functions, str(ctx.option("tools_json")))
        before, after = _split_format(str(ctx.option("plugin_prompt")))
        b.control(f"{_IM_START}system name={_PLUGIN}\n{before}")
        b.content(text)
        b.control(f"{after}{_IM_END}\n")

    def _message(
        self, b: SegmentBuilder, m: Message, kinds: dict[int, str], plugin_newline: bool
    ) -> None:
        i = m.index
        if m.role == "system":
            sub = _SUB_NAMES.get(m.name or "")
            b.turn(
                f"{_IM_START}system" + (f" name={sub}" if sub else "") + "\n",
                m.text,
                f"{_IM_END}\n",
                "",
                i,
            )
        elif m.role == "user":
            b.turn(
                f"{_IM_START}user" + (" name=file" if m.name == "file" else "") + "\n",
                m.text,
                f"{_IM_END}\n",
                "",
                i,
            )
        elif m.role == "tool":
            b.turn(
                f"{_IM_START}environment name={_SUB_NAMES[kinds.get(i, 'plugin')]}\n",
                m.text,
                f"{_IM_END}\n",
                "",
                i,
            )
        else:
            b.control(f"{_IM_START}assistant\n", i)
            b.content(m.text, i, trained=True)
            for call in m.tool_calls:
                if call.is_code:
                    b.control(f"{_ACTION_START}{_INTERPRETER}\n```python\n", i, trained=True)
                    b.content(call.code or "", i, trained=True)
                    b.control(f"\n```{_ACTION_END}\n", i, trained=True)
                else:
                    b.control(f"{_ACTION_START}{_PLUGIN}\n", i, trained=True)
                    b.content(_plugin_call_text(call), i, trained=True)
                    b.control(_ACTION_END, i, trained=True)
                    if plugin_newline:
                        b.control("\n", i, trained=True)
            b.control(_IM_END, i, trained=True)
            b.control("\n", i)


def _split_format(wrapper: str) -> tuple[str, str]:
    """Split a ``str.format`` prompt with one ``{prompt}`` field into its two halves."""
    marker = "\x00PROMPT\x00"
    try:
        text = wrapper.format(prompt=marker)
    except (KeyError, IndexError, ValueError) as exc:
        raise TemplateError(
            f"plugin_prompt must be a str.format string with {{prompt}}: {exc}"
        ) from None
    if marker not in text:
        raise TemplateError("plugin_prompt must contain the field {prompt}")
    before, after = text.split(marker, 1)
    return before, after


def _result_kinds(msgs: tuple[Message, ...]) -> dict[int, str]:
    """For each tool message: ``plugin`` or ``interpreter``, from its name or the call it answers."""
    kinds: dict[int, str] = {}
    by_id: dict[str, str] = {}
    latest = "plugin"
    for m in msgs:
        if m.role == "assistant":
            for call in m.tool_calls:
                latest = _call_kind(call)
                if call.id:
                    by_id[call.id] = latest
        elif m.role == "tool":
            if m.name in _SUB_NAMES:
                kinds[m.index] = m.name
            elif m.tool_call_id and m.tool_call_id in by_id:
                kinds[m.index] = by_id[m.tool_call_id]
            else:
                kinds[m.index] = latest
    return kinds


class InternLM3Template(InternLM2Template):
    """InternLM3-Instruct: the InternLM2 chat format (ChatML + BOS, same special tokens).

    Source: InternLM3's chat docs point to the InternLM2 chat format, its
    tokenizer_config chat template is the InternLM2 one, and LMDeploy serves it
    with its InternLM2 template class. No default system prompt (as the HF template).
    """

    name = "internlm3"
    aliases = ("internlm3-instruct",)
    model_ids = ("internlm/internlm3-8b-instruct",)
    model_patterns = (r"^internlm3-.*instruct",)
    description = (
        "InternLM3-Instruct: the InternLM2 chat format (ChatML + BOS, tools, interpreter)."
    )
    source = "InternLM3 docs (InternLM2 chat format); LMDeploy internlm3 = InternLM2 class"
    official_templates = ()


# --------------------------------------------------------------------------- InternLM v1 (LMDeploy)
class InternLMChatTemplate(Template):
    """LMDeploy's InternLM-Chat (v1) template: ``<|System|>:``/``<|User|>:``/``<|Bot|>:`` lines.

    ``<|Bot|>:{reply}<eoa>\\n``: the reply and ``<eoa>`` are the model's output; the
    newline after it is template text, so ``sequence_start=False`` renders
    ``\\n<|User|>:{prompt}\\n<|Bot|>:`` as in seed 002. Without a leading system
    message the default ``meta_instruction`` is written.
    """

    name = "internlm-chat-7b"
    aliases: tuple[str, ...] = ("internlm", "internlm-chat")
    model_ids: tuple[str, ...] = ("internlm/internlm-chat-7b",)
    model_patterns: tuple[str, ...] = (r"^internlm-chat(?!.*(?:8k|20b))",)
    generation_config = GenerationConfig(session_len=2048, stop_words=(EOA,))
    description = (
        "LMDeploy InternLM-Chat v1: <|System|>:/<|User|>:/<|Bot|>: lines, <eoa> ends replies."
    )
    source = "seed: LMDeploy chat-template design (InternLMChat7B)"
    control_tokens: tuple[str, ...] = (EOA, EOH, BOS, EOS)

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        if conv.tools:
            raise UnsupportedFeatureError(
                f"template {self.name!r} has no tool format", field="tools"
            )
        b = ctx.builder()
        msgs = conv.messages
        if not (msgs and msgs[0].role == "system"):
            b.control(f"<|System|>:{INTERNLM_META_INSTRUCTION}\n")
        for m in msgs:
            i = m.index
            if m.role == "tool" or m.tool_calls:
                raise UnsupportedFeatureError(
                    f"template {self.name!r} has no tool format",
                    index=i,
                    field="tool_calls" if m.tool_calls else "role",
                )
            if m.role == "system":
                b.turn("<|System|>:", m.text, "\n", "", i)
            elif m.role == "user":
                b.turn("<|User|>:", m.text, "\n", "", i)
            else:
                b.control("<|Bot|>:", i)
                b.content(m.text, i, trained=True)
                b.control(EOA, i, trained=True)
                b.control("\n", i)
        if ctx.add_generation_prompt:
            b.control("<|Bot|>:")
        return b.segments


class InternLMChat8KTemplate(InternLMChatTemplate):
    """InternLM-Chat-7B-8K: the v1 chat template with an 8K session."""

    name = "internlm-chat-7b-8k"
    aliases = ("internlm-chat-8k",)
    model_ids = ("internlm/internlm-chat-7b-8k",)
    model_patterns = (r"^internlm-chat-7b-8k",)
    generation_config = GenerationConfig(session_len=8192, stop_words=(EOA,))


class InternLMChat20BTemplate(InternLMChatTemplate):
    """InternLM-Chat-20B: the v1 chat template with an 8K session."""

    name = "internlm-chat-20b"
    aliases = ()
    model_ids = ("internlm/internlm-chat-20b",)
    model_patterns = (r"^internlm-chat-20b",)
    generation_config = GenerationConfig(session_len=8192, stop_words=(EOA,))


class InternLMBaseTemplate(Template):
    """InternLM-7B base model: completion only (the prompt is passed through)."""

    name = "internlm-7b"
    aliases = ()
    model_ids = ("internlm/internlm-7b",)
    model_patterns = (r"^internlm-7b(?!.*chat)",)
    generation_config = GenerationConfig(session_len=2048, capability="completion")
    description = "InternLM-7B base: completion, no chat format."
    source = "seed: LMDeploy chat-template design (internlm-7b = BaseTemplate)"

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        raise TemplateError(f"{self.name!r} is a completion template")  # pragma: no cover


class InternLM20BBaseTemplate(InternLMBaseTemplate):
    """InternLM-20B base model: completion only, 4K session."""

    name = "internlm-20b"
    model_ids = ("internlm/internlm-20b",)
    model_patterns = (r"^internlm-20b(?!.*chat)",)
    generation_config = GenerationConfig(session_len=4096, capability="completion")
    description = "InternLM-20B base: completion, no chat format."
    source = "seed: LMDeploy chat-template design (InternLM20B)"


INTERNLM2 = InternLM2Template()
INTERNLM3 = InternLM3Template()
INTERNLM_CHAT_7B = InternLMChatTemplate()
INTERNLM_CHAT_7B_8K = InternLMChat8KTemplate()
INTERNLM_CHAT_20B = InternLMChat20BTemplate()
INTERNLM_7B = InternLMBaseTemplate()
INTERNLM_20B = InternLM20BBaseTemplate()

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (
    INTERNLM2,
    INTERNLM3,
    INTERNLM_CHAT_7B,
    INTERNLM_CHAT_7B_8K,
    INTERNLM_CHAT_20B,
    INTERNLM_7B,
    INTERNLM_20B,
)
