"""chatfmt's parsers inside vLLM: a tool parser and a reasoning parser for every chatfmt parser.

Installed with chatfmt, registered in every vLLM process through the ``vllm.general_plugins``
entry point (or by ``--tool-parser-plugin chatfmt.integrations.vllm``), switched on by choosing
a name::

    vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice \\
        --tool-call-parser chatfmt-hermes --reasoning-parser chatfmt-qwen3
    vllm serve MODEL --enable-auto-tool-choice --tool-call-parser chatfmt --reasoning-parser chatfmt

* ``chatfmt-<name>``: chatfmt's tool parser ``<name>`` (every name of
  :data:`chatfmt.parsing.TOOL_PARSERS`) and reasoning parser ``<name>`` (every name of
  :data:`chatfmt.parsing.REASONING_PARSERS`).
* ``chatfmt``: the model's own chat template, taken from the tokenizer once, as chatfmt's
  template (a native one where the source is recognised, else the Jinja template with a
  parser derived from it); its tool parser and its reasoning parser.
* Registration adds only ``chatfmt…`` names and may run any number of times. vLLM's own
  names are replaced only when asked: ``CHATFMT_VLLM_REPLACE=hermes,qwen3`` (or ``all``)
  registers chatfmt's parser of that name under vLLM's name too.
* ``tool_choice`` ``"required"`` or a named function: left to vLLM's own structured outputs
  (JSON) by default; ``CHATFMT_VLLM_TOOL_CHOICE=chatfmt`` constrains the model's own call
  format with chatfmt's constraints (:mod:`chatfmt.constraints`) and parses the calls with
  chatfmt.

The parsers stream with ``engine_based_streaming`` (vLLM passes only the new text and token
ids; :meth:`finish_streaming` ends the stream), cost a dictionary lookup to build (the plan is
cached per tokenizer and parser, see :mod:`.engine_stream`), keep special tokens
(``adjust_request`` turns ``skip_special_tokens`` off) and use the token ids vLLM passes to
tell real markers from look-alike text. A call chatfmt flags (e.g. cut off) stays a call.
A caller that passes a ``previous_text`` the parser was not fed gets it fed first (its
result counted as sent). The reasoning parsers follow vLLM's reasoning API: the text around
the markers as written, ``""`` for an empty block of a whole output, a call marker inside
the block ending it at once (vLLM hands the call over as it streams).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, ClassVar

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.tool_parsers import ToolParser, ToolParserManager

from ..errors import ChatFmtError
from ..parsing import REASONING_PARSERS, TOOL_PARSERS
from ..parsing.base import _setup
from ..requests import FromTemplate, ParseRequest
from .engine_names import engine_names
from .engine_stream import EngineStream, Step, StreamPlan, extract, stream_plan

__all__ = [
    "ChatfmtReasoningParser",
    "ChatfmtToolParser",
    "reasoning_parser_class",
    "register",
    "tool_parser_class",
]

#: Environment variable: vLLM names chatfmt's parsers replace (comma-separated, or ``all``).
REPLACE_ENV = "CHATFMT_VLLM_REPLACE"
#: Environment variable: ``chatfmt`` constrains ``tool_choice`` required/named with chatfmt.
TOOL_CHOICE_ENV = "CHATFMT_VLLM_TOOL_CHOICE"


#: chatfmt's flag of a call the output stopped inside.
CUT_OFF = "truncated"


def _template_of(tokenizer: Any) -> Any:
    """chatfmt's template for the tokenizer's chat template (cached per tokenizer)."""
    from .transformers import template_of

    cached = _TEMPLATES.get(id(tokenizer))
    if cached is not None and cached[0] is tokenizer:
        return cached[1]
    template = template_of(tokenizer)
    _TEMPLATES[id(tokenizer)] = (tokenizer, template)
    return template


_TEMPLATES: dict[int, tuple[Any, Any]] = {}


def _chatfmt_tool_choice() -> bool:
    return os.environ.get(TOOL_CHOICE_ENV, "").strip().lower() == "chatfmt"


# --------------------------------------------------------------------------- tool parsers
class ChatfmtToolParser(ToolParser):
    """vLLM tool parser over chatfmt's parser :attr:`chatfmt_parser` (``None``: the template's)."""

    engine_based_streaming = True
    #: chatfmt tool parser name; ``None`` takes the model's own chat template.
    chatfmt_parser: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _chatfmt_tool_choice():
            cls.supports_required_and_named = False

    def __init__(self, tokenizer: Any, tools: Any = None, **_kwargs: Any) -> None:
        super().__init__(tokenizer, tools)
        self._plan = self.plan_for(tokenizer)
        self._stream: EngineStream | None = None
        self._tools_given = tools

    @classmethod
    def plan_for(cls, tokenizer: Any) -> StreamPlan:
        """The cached :class:`~.engine_stream.StreamPlan` of this parser and ``tokenizer``."""
        if cls.chatfmt_parser is None:
            return stream_plan(_template_of(tokenizer), tokenizer=tokenizer, reasoning_parser=None)
        return stream_plan(
            None, tokenizer=tokenizer, parser=cls.chatfmt_parser, reasoning_parser=None
        )

    def _tools_of(self, request: Any) -> Any:
        tools = getattr(request, "tools", None) if request is not None else None
        tools = tools or self._tools_given
        return tools if isinstance(tools, (list, tuple)) and tools else None

    # ---------------------------------------------------------------- request
    def adjust_request(self, request: Any) -> Any:
        if _chatfmt_tool_choice() and getattr(request, "tools", None):
            request = self._constrain(request)
        else:
            request = super().adjust_request(request)
        if getattr(request, "tools", None) and getattr(request, "tool_choice", None) != "none":
            request.skip_special_tokens = False  # markers that are special tokens stay in the text
            if hasattr(request, "spaces_between_special_tokens"):
                request.spaces_between_special_tokens = False
        return request

    def _constrain(self, request: Any) -> Any:
        """``tool_choice`` required/named as chatfmt's constraint of the model's call format."""
        choice = request.tool_choice
        named = getattr(choice, "function", None) or (
            choice if getattr(choice, "name", None) else None
        )
        if choice != "required" and named is None:
            return request
        from vllm.sampling_params import StructuredOutputsParams

        from ..constraints import compile_constraint
        from .engine_stream import tool_dicts

        wire_choice: Any = (
            "required" if named is None else {"type": "function", "function": {"name": named.name}}
        )
        template = _template_of(self.model_tokenizer)
        constraint = compile_constraint(
            template,
            tools=tool_dicts(request.tools),
            tool_choice=wire_choice,
            parallel_tool_calls=bool(getattr(request, "parallel_tool_calls", True)),
        )
        if constraint is None:
            return request
        if constraint.structural_tag is not None:
            request.structured_outputs = StructuredOutputsParams(
                structural_tag=json.dumps(constraint.structural_tag)
            )
        elif constraint.ebnf:
            request.structured_outputs = StructuredOutputsParams(grammar=constraint.ebnf)
        if hasattr(request, "response_format"):
            request.response_format = None
        return request

    # ---------------------------------------------------------------- whole
    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        """The whole output's calls and content.

        A call cut off before its end (chatfmt flags it ``truncated``) is dropped here, as
        vLLM's own parsers do; when no call is left the output is all content. Every other
        flagged call (unknown tool, arguments that are not a JSON object) stays a call.
        """
        got = extract(self._plan, model_output, tools=self._tools_of(request))
        kept = [call for call in got.calls if call.error != CUT_OFF]
        calls = [
            ToolCall(
                id=call.id,
                type="function",
                function=FunctionCall(name=call.name, arguments=call.arguments),
            )
            for call in kept
        ]
        content = got.content if calls or not got.calls else model_output
        return ExtractedToolCallInformation(
            tools_called=bool(calls), tool_calls=calls, content=content
        )

    # ---------------------------------------------------------------- streamed
    def _started(self, request: Any) -> EngineStream:
        stream = self._stream
        if stream is None:
            stream = self._stream = self._plan.stream(self._tools_of(request))
        return stream

    # vLLM reads these at the end of a stream (the rest of the last call's arguments)
    @property
    def prev_tool_call_arr(self) -> list[dict[str, Any]]:
        return self._stream.prev_tool_call_arr if self._stream is not None else []

    @prev_tool_call_arr.setter
    def prev_tool_call_arr(self, value: list[dict[str, Any]]) -> None:
        """Set by vLLM's constructor only (the stream's own bookkeeping is what is read)."""

    @property
    def streamed_args_for_tool(self) -> list[str]:
        return self._stream.streamed_args_for_tool if self._stream is not None else []

    @streamed_args_for_tool.setter
    def streamed_args_for_tool(self, value: list[str]) -> None:
        """Set by vLLM's constructor only."""

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        stream = self._started(request)
        stream.catch_up(previous_text, previous_token_ids)  # a caller that skipped feeding it
        step = stream.feed(delta_text, delta_token_ids or None)
        self.current_tool_id = stream.current_tool_id
        return delta_message(step)

    def finish_streaming(self) -> DeltaMessage | None:
        """End of the stream: what chatfmt held back (text, a call cut off)."""
        if self._stream is None:
            return None
        step = self._stream.finish()
        self.current_tool_id = self._stream.current_tool_id
        return delta_message(step)


def delta_message(step: Step) -> DeltaMessage | None:
    """vLLM's ``DeltaMessage`` of a :class:`~.engine_stream.Step` (``None`` when empty)."""
    if not step:
        return None
    calls: list[DeltaToolCall] = []
    for piece in step.calls:
        if piece.id is None and piece.name is None and not piece.arguments:
            continue  # an error flag alone: nothing to send (the call stays a call)
        last = calls[-1] if calls else None
        if last is not None and last.index == piece.index and piece.name is None:
            fn = last.function
            fn.arguments = (fn.arguments or "") + piece.arguments
            continue
        if piece.name is not None:
            calls.append(
                DeltaToolCall(
                    index=piece.index,
                    id=piece.id,
                    type="function",
                    function=DeltaFunctionCall(name=piece.name, arguments=piece.arguments),
                )
            )
        else:
            calls.append(
                DeltaToolCall(
                    index=piece.index, function=DeltaFunctionCall(arguments=piece.arguments)
                )
            )
    if not calls and not step.content and not step.reasoning:
        return None
    return DeltaMessage(
        content=step.content or None, reasoning=step.reasoning or None, tool_calls=calls
    )


# --------------------------------------------------------------------------- reasoning parsers
class ChatfmtReasoningParser(ReasoningParser):
    """vLLM reasoning parser over chatfmt's :attr:`chatfmt_parser` (``None``: the template's).

    Streaming: reasoning until chatfmt's parser has read the end of the reasoning block and
    the answer starts; then vLLM hands the rest of the stream to the tool parser (the
    answer text of that step, and what :meth:`finish_streaming` releases, go with it).
    """

    engine_based_streaming = True
    #: chatfmt reasoning parser name; ``None`` takes the model's own chat template.
    chatfmt_parser: ClassVar[str | None] = None

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self._plan, self._open, self._close, self._calls = self.plan_for(tokenizer)
        self._stream: EngineStream | None = None
        self._ended = False
        # without a prompt, as vLLM reads it: see IMPLICIT_START
        # (the serving layer skips the reasoning parser when the prompt closed the block)
        self._prefilled: bool | None = (
            None if self.chatfmt_parser is None else self.chatfmt_parser in IMPLICIT_START
        )
        switch = kwargs.get("chat_template_kwargs") or {}
        #: Thinking switched off by the request: the output is the answer (no reasoning
        #: tokens, reasoning over from the start).
        self._thinking_off = (
            switch.get("enable_thinking") is False
            or switch.get("thinking") is False
            or switch.get("thinking_mode") in ("disabled", "off")
        )
        if self._thinking_off:
            self._prefilled = False
        elif switch.get("thinking_mode") == "enabled":
            self._prefilled = True

    @classmethod
    def plan_for(cls, tokenizer: Any) -> tuple[StreamPlan, Marker, Marker, tuple[Marker, ...]]:
        """The cached plan, the token ids of the reasoning block's markers (``()``: none) and
        those of the call markers that end the block (Qwen3's ``<tool_call>``)."""
        key = (cls, id(tokenizer))
        hit = _REASONING_PLANS.get(key)
        if hit is not None and hit[0] is tokenizer:
            return hit[1]
        if cls.chatfmt_parser is None:
            target: Any = _template_of(tokenizer)
            reasoning: str | FromTemplate | None = FromTemplate.TEMPLATE
        else:
            target, reasoning = None, cls.chatfmt_parser
        plan = stream_plan(target, tokenizer=tokenizer, parser="plain", reasoning_parser=reasoning)
        factory = _setup(plan.target, plan.base)[2].reasoning
        ids = [
            _marker_ids(tokenizer, getattr(factory, attr, None))
            for attr in ("open_marker", "close_marker")
        ]
        calls = tuple(
            m
            for m in (
                _marker_ids(tokenizer, marker)
                for marker in (
                    *getattr(factory, "ends_reasoning", ()),
                    *getattr(factory, "ends_unclosed", ()),
                )
            )
            if m
        )
        found = (plan, ids[0], ids[1], calls)
        _REASONING_PLANS[key] = (tokenizer, found)
        return found

    # ---------------------------------------------------------------- token ids
    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """Whether ``input_ids`` close the reasoning block (its end marker after its opener,
        or a call marker that ends it, as the text stream reads it); always, when the request
        switched thinking off."""
        if self._thinking_off:
            return True
        ids = list(input_ids)
        last_close = _last(ids, self._close)
        last_open = _last(ids, self._open)
        if last_close >= 0 and last_open < last_close:
            return True
        return last_open >= 0 and self._first_call(ids, last_open + len(self._open)) >= 0

    def _first_call(self, ids: list[int], start: int) -> int:
        """Where the first call marker that ends the block starts in ``ids[start:]`` (-1: none)."""
        found = [at for at in (_first(ids, call, start) for call in self._calls) if at >= 0]
        return min(found, default=-1)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The ids after the reasoning block's end marker (from a call marker that ends it);
        all of them when the output does not start inside the block and opens none, none while
        the block is open."""
        ids = list(input_ids)
        if not self._close or self._thinking_off:
            return ids
        at = _last(ids, self._close)
        if at >= 0:
            return ids[at + len(self._close) :]
        opened = _last(ids, self._open)
        call = self._first_call(ids, opened + len(self._open) if opened >= 0 else 0)
        if call >= 0:
            return ids[call:]
        return ids if self._prefilled is False and opened < 0 else []

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        """A prompt that ends inside an open reasoning block: the output starts in it."""
        if not self._open or self._stream is not None:
            return
        ids = list(prompt_token_ids)
        opened = _last(ids, self._open)
        self._prefilled = opened >= 0 and opened > _last(ids, self._close)

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        self.set_prompt_token_ids(prompt_token_ids)

    def adjust_request(self, request: Any) -> Any:
        if hasattr(request, "skip_special_tokens"):
            request.skip_special_tokens = False
        if hasattr(request, "spaces_between_special_tokens"):
            request.spaces_between_special_tokens = False  # markers of several tokens stay whole
        return request

    # ---------------------------------------------------------------- whole
    def _stream_plan(self) -> StreamPlan:
        if self._prefilled is None:
            return self._plan
        return _prefilled_plan(self._plan, self._prefilled)

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        """The reasoning and the answer of a whole output, as vLLM gives them: the text around
        the markers as written, and an empty reasoning block as ``""`` (``None``: no block)."""
        got = extract(self._stream_plan(), model_output, verbatim=True, eager_calls=True)
        reasoning = "" if got.reasoning is None and got.reasoning_block else got.reasoning
        return reasoning, got.content

    # ---------------------------------------------------------------- streamed
    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> DeltaMessage | None:
        stream = self._stream
        if stream is None:
            stream = self._stream = self._stream_plan().stream(verbatim=True, eager_calls=True)
        stream.catch_up(previous_text, previous_token_ids)  # a caller that skipped feeding it
        step = stream.feed(delta_text, delta_token_ids or None)
        if not self._ended and stream.in_answer:
            self._ended = True
        if not step:
            return None
        return DeltaMessage(content=step.content or None, reasoning=step.reasoning or None)

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self._ended

    def finish_streaming(self) -> DeltaMessage | None:
        """At the end of the reasoning (or of the stream): the text chatfmt held back."""
        if self._stream is None:
            return None
        step = self._stream.finish()
        if not step:
            return None
        return DeltaMessage(content=step.content or None, reasoning=step.reasoning or None)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """Tokens between the reasoning block's markers (from the start when it was prefilled;
        none when the request switched thinking off)."""
        ids = list(token_ids)
        if not self._close or self._thinking_off:
            return 0
        end = _last(ids, self._close)
        opened = _last(ids[: end if end >= 0 else len(ids)], self._open)
        if opened < 0 and not self._prefilled:
            return 0
        start = opened + len(self._open) if opened >= 0 else 0
        return max((end if end >= 0 else len(ids)) - start, 0)


#: Reasoning parsers whose vLLM namesakes read output without a prompt as starting inside the
#: reasoning block (their templates open it in the generation prompt).
IMPLICIT_START = frozenset({"qwen3", "deepseek_r1", "think"})

#: The token ids of a marker (``()``: no marker, or the tokenizer cannot say).
Marker = tuple[int, ...]

_REASONING_PLANS: dict[Any, tuple[Any, tuple[StreamPlan, Marker, Marker, tuple[Marker, ...]]]] = {}
_PREFILLED: dict[tuple[int, bool], tuple[StreamPlan, StreamPlan]] = {}


def _prefilled_plan(plan: StreamPlan, prefilled: bool) -> StreamPlan:
    key = (id(plan), prefilled)
    hit = _PREFILLED.get(key)
    if hit is not None and hit[0] is plan:
        return hit[1]
    other = StreamPlan.__new__(StreamPlan)
    for name in StreamPlan.__slots__:
        setattr(other, name, getattr(plan, name))
    other.base = ParseRequest.from_kwargs({"thinking_prefilled": prefilled}, plan.base)
    _PREFILLED[key] = (plan, other)
    return other


def _first(ids: list[int], marker: Marker, start: int = 0) -> int:
    """Where the first occurrence of ``marker`` at or after ``start`` starts (``-1``: none)."""
    n = len(marker)
    if not n:
        return -1
    first = marker[0]
    for i in range(start, len(ids) - n + 1):
        if ids[i] == first and tuple(ids[i : i + n]) == marker:
            return i
    return -1


def _last(ids: list[int], marker: Marker) -> int:
    """Where the last occurrence of ``marker`` starts in ``ids`` (``-1``: none)."""
    n = len(marker)
    if not n:
        return -1
    first = marker[0]
    for i in range(len(ids) - n, -1, -1):
        if ids[i] == first and tuple(ids[i : i + n]) == marker:
            return i
    return -1


def _marker_ids(tokenizer: Any, marker: str | None) -> Marker:
    """The ids of ``marker``: its special token, else how the tokenizer encodes it."""
    if not marker:
        return ()
    try:
        tid = tokenizer.get_vocab().get(marker)
        if isinstance(tid, int):
            return (tid,)
        ids = tokenizer.encode(marker, add_special_tokens=False)
    except Exception:  # an engine tokenizer that cannot say: markers decided by text alone
        return ()
    return tuple(ids) if isinstance(ids, list) and all(isinstance(i, int) for i in ids) else ()


# --------------------------------------------------------------------------- registration
#: vLLM 0.33's xgrammar structural-tag model of the parser it registers under the same name:
#: vLLM constrains ``tool_choice`` (and, with strict tool calling, ``auto``) with it.
XGRAMMAR_MODELS = {
    "deepseek_v3": "deepseek_r1",
    "deepseek_v31": "deepseek_v3_1",
    "deepseek_v32": "deepseek_v3_2",
    "deepseek_v4": "deepseek_v4",
    "glm45": "glm_4_7",
    "hermes": "hermes",
    "kimi_k2": "kimi",
    "kimi_k3": "kimi_k3",
    "llama3_json": "llama",
    "llama4_json": "llama",
    "minimax_m2": "minimax",
    "openai": "harmony",
    "qwen3_coder": "qwen_3_coder",
    "qwen3_xml": "qwen_3_coder",
}
_CLASSES: dict[tuple[type, str | None], type] = {
    (ChatfmtToolParser, None): ChatfmtToolParser,
    (ChatfmtReasoningParser, None): ChatfmtReasoningParser,
}


def _parser_class(base: type, known: Any, name: str | None, **attrs: Any) -> Any:
    """The subclass of ``base`` for chatfmt parser ``name`` (made once, then reused)."""
    cls = _CLASSES.get((base, name))
    if cls is None:
        kind = base.__name__.removeprefix("Chatfmt")
        if name is None or name not in known:
            raise ChatFmtError(f"chatfmt has no {kind[: -len('Parser')].lower()} parser {name!r}")
        safe = "".join(ch if ch.isalnum() else "_" for ch in name)
        cls = _CLASSES[(base, name)] = type(
            f"Chatfmt_{safe}_{kind}",
            (base,),
            {"chatfmt_parser": name, "__module__": __name__, **attrs},
        )
    return cls


def tool_parser_class(name: str | None) -> type[ChatfmtToolParser]:
    """The vLLM tool parser class of chatfmt's tool parser ``name`` (``None``: the template's)."""
    model = XGRAMMAR_MODELS.get(name) if name is not None else None
    return _parser_class(ChatfmtToolParser, TOOL_PARSERS, name, structural_tag_model=model)


def reasoning_parser_class(name: str | None) -> type[ChatfmtReasoningParser]:
    """The vLLM reasoning parser class of chatfmt's reasoning parser ``name``."""
    return _parser_class(ChatfmtReasoningParser, REASONING_PARSERS, name)


def _replaced() -> set[str]:
    raw = os.environ.get(REPLACE_ENV, "")
    return {n.strip() for n in raw.split(",") if n.strip()}


def register() -> None:
    """Register ``chatfmt`` and ``chatfmt-<name>`` with vLLM (idempotent; see module doc).

    The ``vllm.general_plugins`` entry point; importing this module calls it too.
    """
    replace = _replaced()
    every = "all" in replace
    for parser in engine_names("tool"):
        cls = tool_parser_class(parser.chatfmt)
        ToolParserManager.register_module(parser.engine_name, force=True, module=cls)
        if parser.chatfmt is not None and (every or parser.chatfmt in replace):
            ToolParserManager.register_module(parser.chatfmt, force=True, module=cls)
    for parser in engine_names("reasoning"):
        rcls = reasoning_parser_class(parser.chatfmt)
        ReasoningParserManager.register_module(parser.engine_name, force=True, module=rcls)
        if parser.chatfmt is not None and (every or parser.chatfmt in replace):
            ReasoningParserManager.register_module(parser.chatfmt, force=True, module=rcls)


register()
