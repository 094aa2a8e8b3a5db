"""Google Gemma chat formats: Gemma 1/2 (no system role) and Gemma 3 (system folded into the first user turn).

Both wrap turns as ``<start_of_turn>{role}\\n{content|trim}<end_of_turn>\\n`` with the
assistant role spelled ``model``, and require user/assistant alternation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from ...history_rules import HistoryRules, Shown
from ...jinja.packaged import PackagedTemplate
from ...protocol import Conversation, Message, Tool, ToolCall
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template, refuse_system_without_user
from .markers import (
    BOS,
    END_FUNCTION_CALL,
    END_FUNCTION_DECLARATION,
    END_FUNCTION_RESPONSE,
    END_OF_TURN,
    EOS,
    ESCAPE,
    START_FUNCTION_CALL,
    START_FUNCTION_DECLARATION,
    START_FUNCTION_RESPONSE,
    START_OF_TURN,
    TOOL_RESPONSE_OPEN,
    TURN_CLOSE,
)
from .parser import FunctionGemmaParser, Gemma4Parser, Gemma4Reasoning

_START = START_OF_TURN
_END = END_OF_TURN
_ALTERNATE = "conversation roles must alternate user/assistant/user/assistant/..."


class _GemmaBase(Template):
    """Shared Gemma rendering; subclasses choose how a leading system message is handled."""

    bos = BOS
    control_tokens = (BOS, EOS, _START, _END)
    #: ``"reject"`` (Gemma 1/2) or ``"fold"`` (Gemma 3: ``system + "\\n\\n"`` before the first turn).
    system_handling: ClassVar[str] = "reject"

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        msgs = list(conv.messages)
        b = ctx.builder()
        b.control(self.bos)
        prefix: Message | None = None
        if msgs and msgs[0].role == "system":
            if self.system_handling == "fold":
                prefix = msgs.pop(0)
                refuse_system_without_user(self.name, prefix, msgs)
            elif ctx.option("merge_system_into_first_user"):
                # llama.cpp's Jinja workaround: system + "\n" + first message, trimmed as one.
                prefix = msgs.pop(0)
                if not msgs or msgs[0].role != "user":
                    raise RoleOrderError(
                        "merge_system_into_first_user needs a user message right after the system message",
                        index=prefix.index,
                        field="role",
                    )
            else:
                raise UnsupportedFeatureError(
                    f"System role not supported by {self.name!r} (pass merge_system_into_first_user=True "
                    "to fold it into the first user turn, as llama.cpp does)",
                    index=msgs[0].index,
                    field="role",
                )
        for pos, m in enumerate(msgs):
            self._check(m, pos)
            role = "model" if m.role == "assistant" else m.role
            trained = m.role == "assistant"
            b.control(f"{_START}{role}\n", m.index)
            if pos == 0 and prefix is not None:
                if self.system_handling == "fold":
                    b.content(prefix.text, prefix.index)
                    b.control("\n\n", prefix.index)
                    b.content(m.text.strip(), m.index, trained)
                else:
                    self._merged_content(b, prefix, m)
            else:
                b.content(m.text.strip(), m.index, trained)
            b.control(_END, m.index, trained)
            b.control("\n", m.index)
        if ctx.add_generation_prompt:
            b.control(f"{_START}model\n")
        return b.segments

    @staticmethod
    def _merged_content(b: SegmentBuilder, system: Message, user: Message) -> None:
        """Emit ``(system + "\\n" + user) | trim`` as per-message segments."""
        full = system.text + "\n" + user.text
        start = len(full) - len(full.lstrip())
        end = len(full.rstrip())
        cut = len(system.text)
        b.content(full[start : min(cut, end)], system.index)
        b.control(full[max(cut, start) : min(cut + 1, end)], system.index)
        b.content(full[max(cut + 1, start) : end], user.index)

    def _check(self, m: Message, pos: int) -> None:
        if m.tool_calls or m.role == "tool":
            raise UnsupportedFeatureError(
                f"template {self.name!r} has no tool-call or tool-result format",
                index=m.index,
                field="tool_calls" if m.tool_calls else "role",
            )
        if m.content is None:
            raise ValidationError(
                "Gemma templates need string content", index=m.index, field="content"
            )
        if (m.role == "user") != (pos % 2 == 0):
            raise RoleOrderError(_ALTERNATE, index=m.index, field="role")


_GEMMA_GEN = GenerationConfig(
    session_len=8192,
    stop_words=(END_OF_TURN, EOS),
    top_p=0.95,
    top_k=64,
    temperature=1.0,
)


class Gemma2(_GemmaBase):
    """Gemma 1, 1.1 and 2 instruction-tuned models: the system role is rejected.

    Option ``merge_system_into_first_user=True`` reproduces llama.cpp's Jinja path,
    which merges a leading system message into the first user turn as
    ``(system + "\\n" + user) | trim``.
    """

    name = "gemma2"
    aliases = ("gemma", "gemma-2", "gemma-it", "gemma1", "gemma-1.1")
    model_ids = (
        "google/gemma-2-2b-it",
        "google/gemma-2-9b-it",
        "google/gemma-2-27b-it",
        "google/gemma-7b-it",
        "google/gemma-2b-it",
        "google/gemma-1.1-7b-it",
        "google/gemma-1.1-2b-it",
    )
    model_patterns = (r"gemma-?2.*-it", r"gemma-?(1\.1-)?\d+b-it", r"^gemma-?2")
    description = "Gemma 1/2: <start_of_turn>user|model … <end_of_turn>; no system role."
    source = "official Jinja: google-gemma-2-2b-it.jinja"
    official_templates = ("google-gemma-2-2b-it.jinja", "llamacpp-google-gemma-7b-it.jinja")
    default_options: ClassVar[Mapping[str, Any]] = {"merge_system_into_first_user": False}
    generation_config = _GEMMA_GEN
    system_handling = "reject"


class Gemma3(_GemmaBase):
    """Gemma 3 instruction-tuned models: a leading system message becomes ``system\\n\\n`` before the first turn."""

    name = "gemma3"
    aliases = ("gemma-3",)
    model_ids = (
        "google/gemma-3-270m-it",
        "google/gemma-3-1b-it",
        "google/gemma-3-4b-it",
        "google/gemma-3-12b-it",
        "google/gemma-3-27b-it",
    )
    model_patterns = (r"gemma-?3",)
    description = "Gemma 3: like Gemma 2, system text folded into the first user turn."
    source = "official Jinja: ollama-gemma3-270m.jinja (GGUF of google/gemma-3-270m-it)"
    official_templates = ("ollama-gemma3-270m.jinja",)
    generation_config = _GEMMA_GEN.replace(session_len=32768)
    system_handling = "fold"


GEMMA2 = Gemma2()
GEMMA3 = Gemma3()

#: This module's templates, added to the registry in this order (see chatfmt.families).
#: Gemma 4 (official Jinja, rendered as is): ``<|turn>role\n…<turn|>``, tool calls
#: ``<|tool_call>call:NAME{…}<tool_call|>`` (the model then writes ``<|tool_response>`` and stops),
#: reasoning ``<|channel>thought\n…<channel|>``, ``enable_thinking`` puts ``<|think|>`` in the system turn.
_GEMMA4_GENERATION = GenerationConfig(
    stop_words=(TURN_CLOSE, TOOL_RESPONSE_OPEN, EOS),
    temperature=1.0,
    top_p=0.95,
    top_k=64,
    session_len=262144,
)
_GEMMA4_VARIABLES = {"bos_token": BOS, "eos_token": EOS}
#: Gemma 4 writes reasoning only for replies with tool calls after the last user message
#: (thinking between calls); other reasoning is not shown to the model again.
GEMMA4_HISTORY = HistoryRules(reasoning=Shown.CALLS_AFTER_LAST_USER)

GEMMA4 = PackagedTemplate(
    "google-gemma-4-31B-it.jinja",
    history=GEMMA4_HISTORY,
    name="gemma4",
    model_ids=(
        "google/gemma-4-31B-it",
        "google/gemma-4-26B-A4B-it",
        "google/gemma-4-E4B-it",
        "google/gemma-4-E2B-it",
    ),
    aliases=("gemma-4",),
    tool_parser=Gemma4Parser,
    reasoning_parser=Gemma4Reasoning,
    generation=_GEMMA4_GENERATION,
    variables=_GEMMA4_VARIABLES,
    description="Gemma 4 (<|turn> turns, <|tool_call> calls, <|channel>thought reasoning)",
)
GEMMA4_INTERLEAVED = PackagedTemplate(
    "google-gemma-4-31B-it-interleaved.jinja",
    history=GEMMA4_HISTORY,
    name="gemma4-interleaved",
    tool_parser=Gemma4Parser,
    reasoning_parser=Gemma4Reasoning,
    generation=_GEMMA4_GENERATION,
    variables=_GEMMA4_VARIABLES,
    description="Gemma 4 with reasoning kept between tool calls (interleaved thinking variant)",
)

#: FunctionGemma's tool section opener (written unless the system text is exactly it).
FUNCTION_GEMMA_SYSTEM = "You can do function calling with the following functions:"


#: Pieces of FunctionGemma text: (text, is markup). Markup is written as control text (it
#: holds ``<escape>`` and the other special tokens), the rest — names, keys, strings from the
#: request — as content.
_Pieces = list[tuple[str, bool]]


def _fg_value(value: Any) -> _Pieces:
    """A value in FunctionGemma's literal syntax: ``<escape>``-quoted strings, bare numbers and
    booleans, ``{key:value}`` objects with sorted keys, ``[a,b]`` lists."""
    if isinstance(value, str):
        return [(ESCAPE, True), (value, False), (ESCAPE, True)]
    if isinstance(value, Mapping):
        out: _Pieces = [("{", True)]
        for k, key in enumerate(sorted(value)):
            out += [(",", True)] if k else []
            out += [(str(key), False), (":", True), *_fg_value(value[key])]
        return [*out, ("}", True)]
    if isinstance(value, (list, tuple)):
        out = [("[", True)]
        for k, item in enumerate(value):
            out += [(",", True)] if k else []
            out += _fg_value(item)
        return [*out, ("]", True)]
    if isinstance(value, bool):
        return [("true" if value else "false", False)]
    if value is None:
        return [("null", False)]
    if isinstance(value, float) and value.is_integer():
        return [(str(int(value)), False)]
    return [(str(value), False)]


def _fg_schema(schema: Mapping[str, Any]) -> _Pieces:
    """A JSON schema as a declaration writes it: keys sorted, ``type`` values upper-cased, a
    property's ``description`` always present."""
    out: _Pieces = [("{", True)]
    for k, key in enumerate(sorted(schema)):
        value = schema[key]
        out += [(",", True)] if k else []
        out += [(str(key), False), (":", True)]
        if key == "type" and isinstance(value, str):
            out += _fg_value(value.upper())
        elif key == "properties" and isinstance(value, Mapping):
            out.append(("{", True))
            for j, name in enumerate(sorted(value)):
                out += [(",", True)] if j else []
                prop = value[name]
                described = {"description": "", **prop} if isinstance(prop, Mapping) else prop
                out += [(str(name), False), (":", True)]
                out += _fg_schema(described) if isinstance(described, Mapping) else []
            out.append(("}", True))
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out += _fg_schema(value)
        else:
            out += _fg_value(value)
    return [*out, ("}", True)]


def _fg_declaration(tool: Tool) -> _Pieces:
    fn = tool.raw.get("function", tool.raw)
    params = {k: v for k, v in (fn.get("parameters") or {}).items() if v not in ({}, [], None)}
    out: _Pieces = [
        (START_FUNCTION_DECLARATION + "declaration:", True),
        (tool.name, False),
        ("{description:", True),
        *_fg_value(fn.get("description") or ""),
    ]
    if params:
        out += [(",parameters:", True), *_fg_schema(params)]
    return [*out, ("}" + END_FUNCTION_DECLARATION, True)]


def _emit(b: SegmentBuilder, pieces: _Pieces, index: int | None, trained: bool = False) -> None:
    for text, markup in pieces:
        if markup:
            b.control(text, index, trained)
        else:
            b.content(text, index, trained)


class FunctionGemma(Template):
    """FunctionGemma (Gemma 3 270M tuned for function calling): Gemma turns with a
    ``developer`` system turn that declares the tools, calls
    ``<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>`` and results
    ``<start_function_response>response:NAME{<escape>…<escape>}<end_function_response>``
    right after them, in the model's turn (the model goes on writing after the results).

    No official Jinja file is shipped: built from Ollama's FunctionGemma renderer and its
    test cases (``model/renderers/functiongemma.go``, ``functiongemma_test.go``), which
    follow the model card's format; declarations write a tool's parameters with sorted keys.
    """

    name = "functiongemma"
    aliases = ("function-gemma",)
    model_ids = ("google/functiongemma-270m-it",)
    model_patterns = (r"functiongemma",)
    description = (
        "FunctionGemma: <start_of_turn> turns, developer turn with function declarations, "
        "<start_function_call>call:NAME{…}<end_function_call>."
    )
    source = "Ollama's FunctionGemma renderer and its tests (no official file)"
    supports_tools = True
    tool_parser_class = FunctionGemmaParser
    control_tokens = (
        BOS,
        EOS,
        _START,
        _END,
        START_FUNCTION_CALL,
        END_FUNCTION_CALL,
        START_FUNCTION_DECLARATION,
        END_FUNCTION_DECLARATION,
        START_FUNCTION_RESPONSE,
        END_FUNCTION_RESPONSE,
        ESCAPE,
    )
    generation_config = GenerationConfig(
        session_len=32768,
        stop_words=(END_OF_TURN, START_FUNCTION_RESPONSE, EOS),
        top_k=64,
        top_p=0.95,
        temperature=1.0,
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        b.control(BOS)
        msgs = list(conv.messages)
        system = msgs.pop(0) if msgs and msgs[0].role == "system" else None
        text = system.text.strip() if system is not None else ""
        if text or conv.tools:
            index = system.index if system is not None else None
            b.control(f"{_START}developer\n", index)
            if text:
                b.content(text, index)
            if conv.tools:
                if text:
                    b.control("\n", index)
                if text != FUNCTION_GEMMA_SYSTEM:
                    b.control(FUNCTION_GEMMA_SYSTEM)
                for tool in conv.tools:
                    _emit(b, _fg_declaration(tool), None)
            b.control(f"{_END}\n", index)
        after = ""  # "call": a result is expected next; "result": the model's turn goes on
        for pos, m in enumerate(msgs):
            nxt = msgs[pos + 1] if pos + 1 < len(msgs) else None
            if m.role == "assistant":
                if after != "result":
                    b.control(f"{_START}model\n", m.index)
                after = ""
                if m.content is None and not m.tool_calls:
                    raise ValidationError(
                        "content must be a string", index=m.index, field="content"
                    )
                b.content(m.text.strip(), m.index, True)
                for call in m.tool_calls:
                    self._call(b, call, m.index)
                if m.tool_calls and nxt is not None and nxt.role == "tool":
                    b.control(START_FUNCTION_RESPONSE, m.index, True)
                    after = "call"
                else:
                    b.control(_END, m.index, True)
                    b.control("\n", m.index)
            elif m.role == "tool":
                if after != "call":
                    b.control(START_FUNCTION_RESPONSE, m.index)
                b.control(f"response:{self._result_name(msgs, pos)}{{", m.index)
                b.control(ESCAPE, m.index)
                b.content(m.text, m.index)
                b.control(ESCAPE + "}" + END_FUNCTION_RESPONSE, m.index)
                after = "result"
            else:
                role = "user" if m.role == "user" else m.role
                if after != "result":
                    b.control(f"{_START}{role}\n", m.index)
                after = ""
                b.content(m.text.strip(), m.index)
                b.control(f"{_END}\n", m.index)
        if ctx.add_generation_prompt and after != "result":
            b.control(f"{_START}model\n")
        return b.segments

    @staticmethod
    def _call(b: SegmentBuilder, call: ToolCall, index: int) -> None:
        if not isinstance(call.arguments, Mapping):
            raise ValidationError(
                "FunctionGemma writes arguments as an object", index=index, field="tool_calls"
            )
        b.control(f"{START_FUNCTION_CALL}call:", index, True)
        b.content(call.name, index, True)
        _emit(b, _fg_value(call.arguments), index, True)
        b.control(END_FUNCTION_CALL, index, True)

    @staticmethod
    def _result_name(msgs: list[Message], pos: int) -> str:
        """The name of the call a result answers: the previous assistant's calls, in order."""
        for j in range(pos - 1, -1, -1):
            m = msgs[j]
            if m.role == "assistant" and m.tool_calls:
                k = sum(1 for r in msgs[j + 1 : pos] if r.role == "tool")
                return m.tool_calls[k].name if k < len(m.tool_calls) else ""
            if m.role != "tool":
                break
        return ""


FUNCTIONGEMMA = FunctionGemma()

TEMPLATES: tuple[Template, ...] = (GEMMA2, GEMMA3, GEMMA4, GEMMA4_INTERLEAVED, FUNCTIONGEMMA)
