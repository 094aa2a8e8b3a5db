"""chatfmt's parsers inside SGLang: tool-call detectors and reasoning detectors.

:func:`register` adds a tool-call detector to ``FunctionCallParser.ToolCallParserEnum`` and a
reasoning detector to ``ReasoningParser.DetectorMap`` for every chatfmt parser
(``chatfmt-<name>``) and for the model's own chat template (``chatfmt``), and the names to
SGLang's CLI choice lists. It is idempotent, and replaces built-in names only when asked
(``replace=``). It runs in every SGLang process through the ``sglang.srt.plugins`` entry point
(installed with chatfmt; SGLang loads it before it parses arguments), and the launcher
``python -m chatfmt.integrations.sglang <sglang launch_server arguments>`` registers, then
starts SGLang's own server unchanged. See ``docs/engines-lmdeploy-sglang.md``.

Each detector streams through one :class:`~chatfmt.parsing.StreamParser` per request (from a
plan cached per tokenizer and name) and keeps the bookkeeping SGLang's serving layer reads at
the end of a stream (``prev_tool_call_arr``, ``streamed_args_for_tool``) consistent, so no
argument text is sent twice. Whole outputs follow SGLang's conventions (content stripped;
an output whose calls are all invalid is all content). For ``tool_choice`` required or named,
formats with one JSON object per call between markers give SGLang their structural tag; the
others leave it to SGLang's JSON-array constraint.
"""

from __future__ import annotations

import functools
import runpy
import sys
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import (
    StreamingParseResult,
    StructureInfo,
    ToolCallItem,
)
from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector
from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult

from ..errors import UnsupportedFeatureError
from ..parsing import TOOL_PARSERS, ToolCallFormat
from .engine_names import (
    TEMPLATE_NAME,
    EngineParser,
    chatfmt_name,
    engine_names,
    engine_plan,
    parser_class,
)
from .engine_stream import EngineStream, Step, extract

__all__ = [
    "BUILTIN_EQUIVALENTS",
    "ChatfmtReasoningDetector",
    "ChatfmtToolDetector",
    "main",
    "register",
]

#: SGLang built-in names and the chatfmt parser that reads the same format (for ``replace``).
BUILTIN_EQUIVALENTS: dict[str, dict[str, str]] = {
    "tool": {
        "hermes": "hermes",
        "qwen": "hermes",
        "qwen25": "hermes",
        "llama3": "llama3_json",
        "interns1": "interns1",
        "mistral": "mistral",
        "pythonic": "pythonic",
        "qwen3_coder": "qwen3_coder",
        "deepseekv3": "deepseek_v3",
        "deepseekv31": "deepseek_v31",
        "kimi_k2": "kimi_k2",
        "glm45": "glm45",
        "gpt-oss": "gpt_oss",
    },
    "reasoning": {
        "qwen3": "qwen3",
        "deepseek-r1": "deepseek_r1",
        "kimi_k2": "kimi_k2",
    },
}


def _tool_items(step: Step) -> list[ToolCallItem]:
    return [
        ToolCallItem(tool_index=p.index, name=p.name, parameters=p.arguments) for p in step.calls
    ]


@functools.cache
def _json_call_format(engine_name: str, target: Any) -> ToolCallFormat | None:
    """The format of ``engine_name`` when a call is one JSON object between markers."""
    from ..constraints.format_of import _declared, tool_call_format

    name = chatfmt_name(engine_name)
    forms: tuple[ToolCallFormat, ...] = ()
    if name is None:
        found = tool_call_format(target)
        forms = (found,) if found is not None else ()
    else:
        forms = _declared(TOOL_PARSERS[name])
    if len(forms) != 1:
        return None
    fmt = forms[0]
    plain = fmt.encoding == "json_call" and fmt.call_begin and not fmt.calls_begin
    return fmt if plain else None


def _tool_dicts(tools: Sequence[Any] | None) -> list[Any] | None:
    return list(tools) if tools else None


class ChatfmtToolDetector(BaseFormatDetector):
    """An SGLang tool-call detector reading one chatfmt parser (see module doc)."""

    #: The engine name this class stands for (``chatfmt`` or ``chatfmt-<name>``).
    engine_name: ClassVar[str] = TEMPLATE_NAME

    def __init__(self, tokenizer: Any = None) -> None:
        super().__init__()
        self._plan = engine_plan(self.engine_name, None, tokenizer)
        self._stream: EngineStream | None = None
        self._json_call = _json_call_format(self.engine_name, self._plan.target)
        if self._json_call is not None:
            self.bot_token, self.eot_token = self._json_call.call_begin, self._json_call.call_end

    def _open(self, tools: Sequence[Any] | None) -> EngineStream:
        stream = self._stream
        if stream is None:
            stream = self._stream = self._plan.stream(_tool_dicts(tools))
        return stream

    # SGLang reads these at stream end: the stream's bookkeeping, made when read
    @property
    def prev_tool_call_arr(self) -> list[dict[str, Any]]:
        stream = getattr(self, "_stream", None)
        return stream.prev_tool_call_arr if stream is not None else []

    @prev_tool_call_arr.setter
    def prev_tool_call_arr(self, value: list[dict[str, Any]]) -> None:
        """Set by SGLang's constructor only (the stream's own bookkeeping is what is read)."""

    @property
    def streamed_args_for_tool(self) -> list[str]:
        stream = getattr(self, "_stream", None)
        return stream.streamed_args_for_tool if stream is not None else []

    @streamed_args_for_tool.setter
    def streamed_args_for_tool(self, value: list[str]) -> None:
        """Set by SGLang's constructor only."""

    def _result(self, stream: EngineStream, step: Step) -> StreamingParseResult:
        self.current_tool_id = stream.current_tool_id
        self.current_tool_name_sent = stream.current_tool_id >= 0
        return StreamingParseResult(normal_text=step.content, calls=_tool_items(step))

    def parse_streaming_increment(
        self, new_text: str, tools: Sequence[Any]
    ) -> StreamingParseResult:
        """The next piece of output: its content and tool-call pieces (call ordinal index)."""
        stream = self._open(tools)
        return self._result(stream, stream.feed(new_text))

    def finish(self, tools: Sequence[Any]) -> StreamingParseResult:
        """End of stream: held-back text and calls left open."""
        if self._stream is None:
            return StreamingParseResult()
        stream = self._stream
        return self._result(stream, stream.finish())

    def detect_and_parse(self, text: str, tools: Sequence[Any]) -> StreamingParseResult:
        """A whole output: content and calls (``tool_index``: the tool's place in ``tools``)."""
        found = extract(self._plan, text, tools=_tool_dicts(tools))
        places = {t.function.name: i for i, t in enumerate(tools or ()) if t.function.name}
        calls = [
            ToolCallItem(tool_index=places.get(c.name, -1), name=c.name, parameters=c.arguments)
            for c in found.calls
            if c.error is None
        ]
        if found.calls and not calls:  # SGLang's whole-text rule: no valid call, all text
            return StreamingParseResult(normal_text=text, calls=[])
        # SGLang's whole-text content is stripped
        return StreamingParseResult(normal_text=(found.content or "").strip(), calls=calls)

    def has_tool_call(self, text: str) -> bool:
        """Whether ``text`` holds a valid tool call in this format."""
        return any(call.error is None for call in extract(self._plan, text).calls)

    def supports_structural_tag(self) -> bool:
        """Whether the format is one JSON object per call between markers (see below)."""
        return self._json_call is not None

    def structure_info(self) -> Any:
        """Begin/end/trigger of a call, for SGLang's structural tags (JSON-object formats)."""
        fmt = self._json_call
        if fmt is None:

            def refuse(name: str) -> StructureInfo:
                raise UnsupportedFeatureError(
                    f"{self.engine_name}: this format has no JSON-object call to constrain "
                    f"(tool {name!r}); required/named tool_choice uses SGLang's JSON array"
                )

            return refuse
        return lambda name: StructureInfo(
            begin=f'{fmt.call_begin}{{"{fmt.name_key}": "{name}", "{fmt.args_key}": ',
            end="}" + fmt.call_end,
            trigger=fmt.call_begin,
        )


class ChatfmtReasoningDetector(BaseReasoningFormatDetector):
    """An SGLang reasoning detector reading one chatfmt reasoning parser (see module doc)."""

    engine_name: ClassVar[str] = TEMPLATE_NAME

    def __init__(
        self,
        stream_reasoning: bool = True,
        force_reasoning: bool | None = None,
        continue_final_message: bool = False,
        previous_content: str = "",
        force_nonempty_content: bool = False,
        tokenizer: Any = None,
    ) -> None:
        super().__init__(
            "<think>",
            "</think>",
            force_reasoning=bool(force_reasoning),
            stream_reasoning=stream_reasoning,
            continue_final_message=continue_final_message,
            previous_content=previous_content,
            force_nonempty_content=force_nonempty_content,
        )
        prefilled = force_reasoning
        if continue_final_message and previous_content:
            prefilled = self._in_reasoning
        self._plan = engine_plan(None, self.engine_name, tokenizer, prefilled=prefilled)
        self._stream = self._plan.stream()
        self._held: list[str] = []

    def _result(self, step: Step) -> ReasoningResult:
        reasoning = step.reasoning
        if not self.stream_reasoning:  # reasoning is sent whole, once the answer starts
            if reasoning:
                self._held.append(reasoning)
            reasoning = "".join(self._held) if step.content else ""
            if step.content:
                self._held.clear()
        if reasoning or step.content:
            self._in_reasoning = not step.content
        return ReasoningResult(normal_text=step.content, reasoning_text=reasoning)

    def detect_and_parse(self, text: str) -> ReasoningResult:
        """A whole output: its reasoning and its answer."""
        stream = self._plan.stream()
        first, last = stream.feed(text), stream.finish()
        return ReasoningResult(
            normal_text=first.content + last.content,
            reasoning_text=first.reasoning + last.reasoning,
        )

    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        """The next piece of output: its reasoning and answer text."""
        return self._result(self._stream.feed(new_text))

    def finish(self) -> ReasoningResult:
        """End of stream: held-back text (and held reasoning when not streamed)."""
        step = self._stream.finish()
        if not self.stream_reasoning and self._held:
            held = "".join(self._held) + step.reasoning
            self._held.clear()
            return ReasoningResult(normal_text=step.content, reasoning_text=held)
        return ReasoningResult(normal_text=step.content, reasoning_text=step.reasoning)


def _class_for(kind: str, parser: EngineParser) -> type:
    return parser_class(ChatfmtToolDetector if kind == "tool" else ChatfmtReasoningDetector, parser)


def register(replace: bool | Mapping[str, Mapping[str, str]] = False) -> None:
    """Add chatfmt's detectors to SGLang's maps and CLI choices (idempotent).

    ``replace``: also point SGLang built-in names at chatfmt — ``True`` for
    :data:`BUILTIN_EQUIVALENTS`, or ``{"tool": {builtin: chatfmt_name}, "reasoning": {…}}``.
    """
    from sglang.srt.function_call import parser_names
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser import reasoning_parser_names
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    maps = {"tool": FunctionCallParser.ToolCallParserEnum, "reasoning": ReasoningParser.DetectorMap}
    choices = {
        "tool": parser_names.TOOL_CALL_PARSER_NAMES,
        "reasoning": reasoning_parser_names.REASONING_PARSER_NAMES,
    }
    for kind, table in maps.items():
        for parser in engine_names(kind):
            table[parser.engine_name] = _class_for(kind, parser)
            if parser.engine_name not in choices[kind]:
                choices[kind].append(parser.engine_name)
    wanted = BUILTIN_EQUIVALENTS if replace is True else (replace or {})
    for kind, pairs in wanted.items():
        for builtin, name in pairs.items():
            maps[kind][builtin] = _class_for(kind, EngineParser(f"chatfmt-{name}", name))


def main(argv: Sequence[str] | None = None) -> None:
    """Register chatfmt's parsers, then run ``python -m sglang.launch_server`` with ``argv``."""
    register()
    args = list(sys.argv[1:] if argv is None else argv)
    sys.argv = ["sglang.launch_server", *args]
    runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":  # run as a script: register from the importable module
    from chatfmt.integrations.sglang import main as _main

    _main()
