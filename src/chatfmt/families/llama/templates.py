"""Meta Llama chat formats: Llama 2 ``[INST]``, the short Llama 3 template and Llama 3.1/3.2/3.3.

Each template reproduces the model's official Jinja chat template byte for byte
(including its quirks: Llama 2 strips turns, Llama 3.x trims content, puts tools
in the first user turn and JSON-encodes tool results). ``llama2-seed`` is the
layout shown in the ChatML overview seed, kept separately from the official one.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from ...jinja.inputs import Prepared
from ...jinja.packaged import PackagedTemplate
from ...protocol import Conversation, Message, Tool, ToolCall
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template, refuse_system_without_user, text_beside_calls
from ...tool_format import no_tool_format
from .markers import (
    BEGIN_OF_TEXT,
    BOS,
    END_HEADER_ID,
    END_OF_TEXT,
    EOM,
    EOM_ID,
    EOS,
    EOT,
    EOT_ID,
    FINETUNE_RIGHT_PAD_ID,
    INST,
    INST_CLOSE,
    PYTHON_TAG,
    START_HEADER_ID,
    SYS_CLOSE,
    SYS_OPEN,
)
from .parser import Llama3JsonParser, Llama4Parser

ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def strftime_d_b_y(day: _dt.date) -> str:
    """``day`` formatted like ``strftime("%d %b %Y")`` in the C locale (e.g. ``26 Jul 2024``)."""
    return f"{day.day:02d} {_MONTHS[day.month - 1]} {day.year}"


def _reject_tools(name: str, m: Message) -> None:
    if m.tool_calls:
        raise no_tool_format(name, m.index)


# ----------------------------------------------------------------------------- Llama 2
class Llama2Template(Template):
    """Official Llama 2 chat: ``<s>[INST] <<SYS>>\\n{system}\\n<</SYS>>\\n\\n{user} [/INST] {answer} </s>``.

    As the official template: turns are ``strip()``-ed, roles must alternate after
    an optional leading system message, and no generation prompt is added (the
    prompt already ends with `` [/INST]``).
    """

    name = "llama2"
    aliases = ("llama-2", "llama2-chat", "llama-2-chat")
    model_ids = (
        "meta-llama/Llama-2-7b-chat-hf",
        "meta-llama/Llama-2-13b-chat-hf",
        "meta-llama/Llama-2-70b-chat-hf",
    )
    model_patterns = (r"llama-?2.*chat",)
    description = "Llama 2 chat: <s>[INST] <<SYS>>…<</SYS>> user [/INST] answer </s>."
    source = (
        "official Jinja: meta-llama-Llama-2-7b-chat-hf.jinja (Llama-2-*-chat-hf tokenizer_config)"
    )
    official_templates = ("meta-llama-Llama-2-7b-chat-hf.jinja",)
    control_tokens = (BOS, EOS, INST, INST_CLOSE, SYS_OPEN, SYS_CLOSE)
    text_control_tokens = (INST, INST_CLOSE)  # plain text to the Llama 2 tokenizer
    generation_config = GenerationConfig(
        session_len=4096, stop_words=(EOS,), top_p=0.9, temperature=0.6
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        system, msgs = conv.split_system()
        refuse_system_without_user(self.name, system, msgs)
        b = ctx.builder()
        for k, m in enumerate(msgs):
            if m.role == "system":
                # The official template renders a later system message as nothing.
                raise RoleOrderError(
                    f"template {self.name!r} accepts a system message only as the first "
                    "message (the official template drops later ones silently)",
                    index=m.index,
                    field="role",
                )
            if (m.role == "user") != (k % 2 == 0):
                raise RoleOrderError(ALTERNATE, index=m.index, field="role")
            _reject_tools(self.name, m)
            if m.role == "tool":
                raise UnsupportedFeatureError(
                    f"template {self.name!r} has no tool role", index=m.index, field="role"
                )
            if m.role == "user":
                b.control("<s>[INST] ", m.index)
                if k == 0 and system is not None:
                    # The official template strips '<<SYS>>…<</SYS>>\n\n' + user as one string.
                    user = m.text.rstrip()
                    b.turn(
                        "<<SYS>>\n",
                        system.text,
                        "\n<</SYS>>\n\n" if user else "\n<</SYS>>",
                        "",
                        system.index,
                    )
                    b.content(user, m.index)
                else:
                    b.content(m.text.strip(), m.index)
                b.control(" [/INST]", m.index)
            elif m.role == "assistant":
                b.control(" ", m.index, True)
                b.content(m.text.strip(), m.index, True)
                b.control(" </s>", m.index, True)
        return b.segments


class Llama2SeedTemplate(Template):
    """The Llama 2 layout of the ChatML overview seed (a blog's rendition, not Meta's format).

    ``<s>[INST] <<SYS>>\\n{system}\\n<</SYS>>\\n{user}\\n[/INST]\\n{answer}\\n</s>\\n`` and later
    turns ``<s>[INST]\\n{user}\\n[/INST]\\n…``. The seed writes ``<\\s>`` once: a typo of ``</s>``.
    Its first turn header differs from later ones, so this is a small class, not a spec.
    """

    name = "llama2-seed"
    aliases = ("llama2-chatml-seed",)
    description = "Llama 2 as drawn in the ChatML overview seed (newlines around [/INST])."
    source = "seed: ChatML overview (Llama2 ChatML)"
    control_tokens = Llama2Template.control_tokens
    text_control_tokens = Llama2Template.text_control_tokens
    generation_config = GenerationConfig(session_len=4096, stop_words=(EOS,))

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        system, msgs = conv.split_system()
        refuse_system_without_user(self.name, system, msgs)
        b = ctx.builder()
        for k, m in enumerate(msgs):
            if m.role not in ("user", "assistant"):
                raise UnsupportedFeatureError(
                    f"template {self.name!r} supports only one leading system message, then user/assistant",
                    index=m.index,
                    field="role",
                )
            if (m.role == "user") != (k % 2 == 0):
                raise RoleOrderError(ALTERNATE, index=m.index, field="role")
            _reject_tools(self.name, m)
            if m.role == "user":
                b.control("<s>[INST]", m.index)
                if k == 0 and system is not None:
                    b.turn(" <<SYS>>\n", system.text, "\n<</SYS>>", "", system.index)
                b.turn("\n", m.text, "\n[/INST]\n", "", m.index)
            else:
                b.content(m.text, m.index, True)
                b.control("\n</s>", m.index, True)
                b.control("\n", m.index)
        return b.segments


# ----------------------------------------------------------------------------- Llama 3
_HEADER = "<|start_header_id|>{}<|end_header_id|>\n\n"
_EOT = EOT_ID
_EOM = EOM_ID
_LLAMA3_TOKENS = (
    BEGIN_OF_TEXT,
    END_OF_TEXT,
    START_HEADER_ID,
    END_HEADER_ID,
    _EOT,
    _EOM,
    PYTHON_TAG,
    FINETUNE_RIGHT_PAD_ID,
)
_LLAMA3_GEN = GenerationConfig(
    session_len=8192,
    stop_words=(_EOT, END_OF_TEXT),
    top_p=0.9,
    temperature=0.6,
)


def _header_role(m: Message) -> str:
    return "ipython" if m.source_role == "ipython" else m.role


class Llama3Template(Template):
    """The short Llama 3 template (Meta-Llama-3-*-Instruct): headers, trimmed content, ``<|eot_id|>``."""

    name = "llama3"
    aliases = ("llama-3", "llama3-instruct")
    model_ids = (
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "meta-llama/Meta-Llama-3-70B-Instruct",
    )
    model_patterns = (r"llama-?3-\d+b-instruct",)
    description = "Llama 3: <|start_header_id|>role<|end_header_id|>\\n\\n{content|trim}<|eot_id|>."
    source = "official Jinja: meta-llama-Meta-Llama-3-8B-Instruct.jinja (short Llama 3 template)"
    official_templates = ("meta-llama-Meta-Llama-3-8B-Instruct.jinja",)
    control_tokens = _LLAMA3_TOKENS
    generation_config = _LLAMA3_GEN

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        for k, m in enumerate(conv.messages):
            _reject_tools(self.name, m)
            if k == 0:
                b.control(BEGIN_OF_TEXT, m.index)
            b.control(_HEADER.format(_header_role(m)), m.index)
            trained = m.role == "assistant"
            b.content(m.text.strip(), m.index, trained)
            b.control(_EOT, m.index, trained)
        if ctx.add_generation_prompt:
            b.control(_HEADER.format("assistant"))
        return b.segments


_TOOLS_IN_SYSTEM = (
    "You have access to the following functions. To call a function, please respond with JSON for a "
    "function call."
    'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.'
    "Do not use variables.\n\n"
)
_TOOLS_IN_USER = (
    "Given the following functions, please respond with a JSON for a function call "
    "with its proper arguments that best answers the given prompt.\n\n"
    'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.'
    "Do not use variables.\n\n"
)


class Llama31Template(Template):
    """Llama 3.1 / 3.3 with tools: JSON tool calls, ``ipython`` results, built-in ``<|python_tag|>`` tools.

    Options (the official template variables): ``date_string`` (``"26 Jul 2024"``),
    ``tools_in_user_message`` (True: the tool list goes into the first user turn),
    ``builtin_tools`` (e.g. ``["brave_search", "wolfram_alpha"]``; a ``code_interpreter``
    tool in ``tools`` adds ``"code_interpreter"``). Only one tool call per assistant turn.
    """

    name = "llama3.1"
    aliases: tuple[str, ...] = ("llama-3.1", "llama3_1", "llama31")
    model_ids: tuple[str, ...] = (
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.1-405B-Instruct",
        "meta-llama/Meta-Llama-3.1-8B-Instruct",
        "meta-llama/Meta-Llama-3.1-70B-Instruct",
        "meta-llama/Meta-Llama-3.1-405B-Instruct",
    )
    model_patterns: tuple[str, ...] = (r"llama-?3\.1-.*instruct",)
    description = "Llama 3.1: Llama 3 headers plus a dated system block, JSON/<|python_tag|> tool calls, ipython results."
    source = "official Jinja: meta-llama-Llama-3.1-8B-Instruct.jinja"
    official_templates: tuple[str, ...] = ("meta-llama-Llama-3.1-8B-Instruct.jinja",)
    supports_tools = True
    tool_parser_class = Llama3JsonParser
    control_tokens = _LLAMA3_TOKENS
    generation_config = _LLAMA3_GEN.replace(session_len=131072, tool_stop_words=(_EOM,))
    default_options: ClassVar[Mapping[str, Any]] = {
        "date_string": "26 Jul 2024",
        "tools_in_user_message": True,
        "builtin_tools": None,
    }
    #: Whether the template knows ``builtin_tools`` (3.1/3.3 yes, 3.2 no).
    has_builtin_tools: ClassVar[bool] = True

    # ------------------------------------------------------------------ helpers
    def _date(self, ctx: RenderContext) -> str:
        date = ctx.option("date_string")
        if date is None:
            return strftime_d_b_y(ctx.now)
        if not isinstance(date, str):
            raise ValidationError("date_string must be a string", field="date_string")
        return date

    def _builtin(self, conv: Conversation, ctx: RenderContext) -> list[str] | None:
        raw = ctx.option("builtin_tools")
        if not self.has_builtin_tools:
            if raw is not None or conv.has_code_interpreter:
                raise UnsupportedFeatureError(
                    f"template {self.name!r} has no built-in tools (builtin_tools / code_interpreter)",
                    field="tools",
                )
            return None
        if raw is None and not conv.has_code_interpreter:
            return None
        if isinstance(raw, str) or not isinstance(raw, (Sequence, type(None))):
            raise ValidationError(
                "builtin_tools must be a list of tool names", field="builtin_tools"
            )
        names = [str(n) for n in (raw or ())]
        if conv.has_code_interpreter and "code_interpreter" not in names:
            names.append("code_interpreter")
        return names

    @staticmethod
    def _tool_list(b: SegmentBuilder, tools: Sequence[Tool], message: int | None) -> None:
        for t in tools:
            b.content(json.dumps(dict(t.raw), indent=4, ensure_ascii=False), message)
            b.control("\n\n", message)

    def _tool_call(
        self, b: SegmentBuilder, m: Message, builtin: list[str] | None, text: bool = False
    ) -> None:
        if len(m.tool_calls) != 1:
            raise UnsupportedFeatureError(
                "This model only supports single tool-calls at once!",
                index=m.index,
                field="tool_calls",
            )
        call = m.tool_calls[0]
        b.control(_HEADER.format("assistant"), m.index)
        if text:  # the model's own form: its text as written, then the call
            b.content(m.text, m.index, True)
        if builtin is not None and call.name in builtin:
            self._builtin_call(b, m, call)
        else:
            b.control('{"name": "', m.index, True)
            b.content(call.name, m.index, True)
            b.control('", "parameters": ', m.index, True)
            b.content(json.dumps(call.arguments, ensure_ascii=False), m.index, True)
            b.control("}", m.index, True)
        b.control(_EOM if builtin is not None else _EOT, m.index, True)

    @staticmethod
    def _builtin_call(b: SegmentBuilder, m: Message, call: ToolCall) -> None:
        args = call.arguments
        field = "tool_calls[0].function.arguments"
        if not isinstance(args, Mapping):
            raise ValidationError(
                "built-in tool call arguments must be an object", index=m.index, field=field
            )
        b.control(PYTHON_TAG, m.index, True)
        b.content(call.name, m.index, True)
        b.control(".call(", m.index, True)
        for j, (key, val) in enumerate(args.items()):
            if not isinstance(val, str):
                raise ValidationError(
                    f"built-in tool call argument {key!r} must be a string",
                    index=m.index,
                    field=field,
                )
            if j:
                b.control(", ", m.index, True)
            b.content(f'{key}="{val}"', m.index, True)
        b.control(")", m.index, True)

    # ------------------------------------------------------------------ render
    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        system, msgs = conv.split_system()
        tools = conv.function_tools
        builtin = self._builtin(conv, ctx)
        in_user = bool(ctx.option("tools_in_user_message"))
        b = ctx.builder()
        b.control(BEGIN_OF_TEXT)
        sidx = system.index if system else None
        b.control(_HEADER.format("system"), sidx)
        if builtin is not None or tools:
            b.control("Environment: ipython\n", sidx)
        if builtin is not None:
            b.turn(
                "Tools: ",
                ", ".join(n for n in builtin if n != "code_interpreter"),
                "\n\n",
                "",
                sidx,
            )
        b.control(f"Cutting Knowledge Date: December 2023\nToday Date: {self._date(ctx)}\n\n", sidx)
        if tools and not in_user:
            b.control(_TOOLS_IN_SYSTEM, sidx)
            self._tool_list(b, tools, sidx)
        if system is not None:
            b.content(system.text.strip(), sidx)
        b.control(_EOT, sidx)
        if in_user and tools:
            if not msgs:
                raise ValidationError(
                    "Cannot put tools in the first user message when there's no first user message!",
                    field="messages",
                )
            first = msgs.pop(0)
            if first.role != "user" or first.tool_calls:
                # The official template writes messages[0]'s text as the user turn whatever
                # its role, and drops its tool calls.
                raise UnsupportedFeatureError(
                    f"template {self.name!r} puts the tool list into the first user message "
                    f"(tools_in_user_message), but the first message after the system prompt is "
                    f"a {first.role} message; start with a user message or pass "
                    "tools_in_user_message=False",
                    index=first.index,
                    field="role",
                )
            b.control(_HEADER.format("user") + _TOOLS_IN_USER, first.index)
            self._tool_list(b, tools, first.index)
            b.content(first.text.strip(), first.index)
            b.control(_EOT, first.index)
        for m in msgs:
            if m.role == "tool":
                b.turn(
                    _HEADER.format("ipython"),
                    json.dumps(m.text, ensure_ascii=False),
                    _EOT,
                    "",
                    m.index,
                )
            elif m.tool_calls:
                # The official template writes only the call: text beside it is written as the
                # model writes it (or refused with strict_history).
                text = text_beside_calls(self.name, m, ctx, dropped="content", trimmed=True)
                self._tool_call(b, m, builtin, text)
            else:
                trained = m.role == "assistant"
                b.control(_HEADER.format(m.role), m.index)
                b.content(m.text.strip(), m.index, trained)
                b.control(_EOT, m.index, trained)
        if ctx.add_generation_prompt:
            b.control(_HEADER.format("assistant"))
        return b.segments


class Llama32Template(Llama31Template):
    """Llama 3.2: as 3.1 without built-in tools; ``date_string`` defaults to today (``ctx.now``)."""

    name = "llama3.2"
    aliases = ("llama-3.2", "llama3_2", "llama32")
    model_ids = (
        "meta-llama/Llama-3.2-1B-Instruct",
        "meta-llama/Llama-3.2-3B-Instruct",
    )
    model_patterns = (r"llama-?3\.2-.*instruct",)
    description = "Llama 3.2: Llama 3.1's format with today's date and no built-in tools."
    source = "official Jinja: meta-llama-Llama-3.2-3B-Instruct.jinja"
    official_templates = ("meta-llama-Llama-3.2-3B-Instruct.jinja",)
    default_options: ClassVar[Mapping[str, Any]] = {
        "date_string": None,
        "tools_in_user_message": True,
        "builtin_tools": None,
    }
    has_builtin_tools = False


class Llama33Template(Llama31Template):
    """Llama 3.3: the same template as Llama 3.1."""

    name = "llama3.3"
    aliases = ("llama-3.3", "llama3_3", "llama33")
    model_ids = ("meta-llama/Llama-3.3-70B-Instruct",)
    model_patterns = (r"llama-?3\.3-.*instruct",)
    description = "Llama 3.3: identical to the Llama 3.1 format."
    source = "official Jinja: meta-llama-Llama-3.3-70B-Instruct.jinja"
    official_templates = ("meta-llama-Llama-3.3-70B-Instruct.jinja",)


LLAMA2 = Llama2Template()
LLAMA2_SEED = Llama2SeedTemplate()
LLAMA3 = Llama3Template()
LLAMA31 = Llama31Template()
LLAMA32 = Llama32Template()
LLAMA33 = Llama33Template()


#: This module's templates, added to the registry in this order (see chatfmt.families).
#: Llama 4 Scout / Maverick: the official Jinja (the chat template of the models' GGUF, the
#: same for both). Calls are read as the peers read them (vLLM's ``llama4_pythonic``):
#: ``[f(a=1)]``, bare or in ``<|python_start|>``, and in the form the template itself writes
#: past calls in (``<|python_start|>text<|python_end|>{"name": …, "parameters": …}``).
class Llama4Template(PackagedTemplate):
    """Llama 4's official Jinja, with its one refusal that names no message made to name the
    conversation: tools go into the first user message (``tools_in_user_message``, the
    default), so tools without any message after the system prompt are refused up front."""

    def _render_plain(
        self,
        prep: Prepared,
        opts: Mapping[str, Any],
        add_gen: bool,
        when: _dt.datetime,
        merge: bool,
    ) -> Any:
        conv = prep.conv
        if conv.tools and opts.get("tools_in_user_message", True):
            msgs = conv.messages
            if not msgs[1 if msgs and msgs[0].role == "system" else 0 :]:
                raise ValidationError(
                    "Cannot put tools in the first user message when there's no first user "
                    "message! (pass tools_in_user_message=False, or add a user message)",
                    field="messages",
                )
        return super()._render_plain(prep, opts, add_gen, when, merge)


LLAMA4 = Llama4Template(
    "meta-llama-Llama-4-Scout-17B-16E-Instruct.jinja",
    name="llama4",
    aliases=("llama-4",),
    model_ids=(
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "meta-llama/Llama-4-Scout-17B-16E",
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
        "meta-llama/Llama-4-Maverick-17B-128E",
    ),
    model_patterns=(r"llama-4-(scout|maverick)",),
    tool_parser=Llama4Parser,
    generation=GenerationConfig(stop_words=(EOT, EOM), session_len=1048576),
    variables={"bos_token": BEGIN_OF_TEXT, "eos_token": EOT},
    description="Llama 4: <|header_start|>role<|header_end|>…<|eot|>; pythonic tool calls.",
)

TEMPLATES: tuple[Template, ...] = (
    LLAMA2,
    LLAMA2_SEED,
    LLAMA3,
    LLAMA31,
    LLAMA32,
    LLAMA33,
    LLAMA4,
)
