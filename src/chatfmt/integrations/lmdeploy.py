"""chatfmt's parsers inside LMDeploy: tool, reasoning and response parsers.

LMDeploy keeps its parsers in mmengine registries. :func:`register` adds a tool parser
(``ToolParserManager``) and a reasoning parser (``ReasoningParserManager``) for every chatfmt
parser (``chatfmt-<name>``) and for the model's own chat template (``chatfmt``), and puts
:class:`ChatfmtResponseParser` in ``ResponseParserManager`` under ``default``: it parses with
chatfmt when a chatfmt tool or reasoning parser is chosen and is LMDeploy's own default
response parser otherwise. It is idempotent; LMDeploy's built-in tool and reasoning names are
replaced only when asked (``replace=``). LMDeploy has no plugin hook, so the launcher
``python -m chatfmt.integrations.lmdeploy <lmdeploy serve arguments>`` registers, then runs
LMDeploy's own CLI unchanged (and registers in the server processes ``--dp``/multi-node
launches spawn). See ``docs/engines-lmdeploy-sglang.md``.

A response parser streams through one :class:`~chatfmt.parsing.StreamParser` per request (a
plan cached per tokenizer and names): each engine step's text gives reasoning, content and
tool-call deltas, the first delta of a call carrying its id, type and name (LMDeploy's
identity-first contract). Reasoning and answer keep the whitespace around the reasoning
markers as written, as LMDeploy's own parsers return them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from lmdeploy.serve.openai.protocol import DeltaMessage, DeltaToolCall, FunctionCall, ToolCall
from lmdeploy.serve.parsers.reasoning_parser import ReasoningParser, ReasoningParserManager
from lmdeploy.serve.parsers.response_parser import BaseResponseParser, ResponseParserManager
from lmdeploy.serve.parsers.tool_parser import ToolParser, ToolParserManager

from ..errors import UnsupportedFeatureError
from .engine_names import TEMPLATE_NAME, EngineParser, engine_names, engine_plan, parser_class
from .engine_stream import EngineStream, Step, extract

__all__ = [
    "BUILTIN_EQUIVALENTS",
    "ChatfmtReasoningParser",
    "ChatfmtResponseParser",
    "ChatfmtToolParser",
    "main",
    "register",
]

#: LMDeploy built-in names and the chatfmt parser that reads the same format (for ``replace``).
BUILTIN_EQUIVALENTS: dict[str, dict[str, str]] = {
    "tool": {
        "qwen": "hermes",
        "qwen2d5": "hermes",
        "qwen3": "hermes",
        "internlm": "internlm2",
        "intern-s1": "interns1",
        "llama3": "llama3_json",
        "qwen3coder": "qwen3_coder",
        "kimi_k2": "kimi_k2",
        "kimi-k2": "kimi_k2",
        "glm47": "glm45",
        "deepseek-v32": "deepseek_v32",
        "deepseek-v4": "deepseek_v4",
    },
    "reasoning": {"default": "qwen3", "deepseek-v3": "deepseek_r1"},
}


class ChatfmtToolParser(ToolParser):
    """Marks a chatfmt tool parser in LMDeploy's registry; :class:`ChatfmtResponseParser` parses."""

    engine_name: ClassVar[str] = TEMPLATE_NAME

    def get_tool_open_tag(self) -> str | None:
        """None: chatfmt finds the calls itself (see :class:`ChatfmtResponseParser`)."""
        return None

    def get_tool_close_tag(self) -> str | None:
        """None (see :meth:`get_tool_open_tag`)."""
        return None


class ChatfmtReasoningParser(ReasoningParser):
    """Marks a chatfmt reasoning parser in LMDeploy's registry (its markers are chatfmt's).

    Under a replaced built-in name (``register(replace=…)``) it starts in reasoning mode
    exactly when that built-in parser would (DeepSeek-V3 only with ``enable_thinking``).
    """

    engine_name: ClassVar[str] = TEMPLATE_NAME
    #: The LMDeploy parser whose name this class took over, if any.
    builtin: ClassVar[type[ReasoningParser] | None] = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._kwargs = kwargs

    def starts_in_reasoning_mode(self) -> bool:
        """Whether the output starts inside the reasoning block (LMDeploy's default: yes)."""
        builtin = type(self).builtin
        return builtin(**self._kwargs).starts_in_reasoning_mode() if builtin else True

    @classmethod
    def validate_tokenizer(cls, tokenizer: Any) -> None:
        """Nothing to check: chatfmt reads markers by text, and by token id where known."""


def _is_chatfmt(cls: type | None) -> bool:
    return cls is not None and issubclass(cls, (ChatfmtToolParser, ChatfmtReasoningParser))


def _engine_name(cls: type | None) -> str | None:
    if cls is None:
        return None
    if _is_chatfmt(cls):
        name: str = getattr(cls, "engine_name")  # noqa: B009 (set on every chatfmt class)
        return name
    tags = (
        getattr(cls, "get_reasoning_open_tag", None),
        getattr(cls, "get_reasoning_close_tag", None),
    )
    if tags[0] and tags[1] and (tags[0](), tags[1]()) == ("<think>", "</think>"):
        return "chatfmt-qwen3"  # LMDeploy's <think>…</think> reasoning: chatfmt's reader of it
    raise UnsupportedFeatureError(
        f"LMDeploy parser {cls.__name__} cannot be combined with a chatfmt parser: "
        "choose chatfmt parsers for both --tool-call-parser and --reasoning-parser"
    )


def _tool_call_deltas(step: Step) -> list[DeltaToolCall]:
    out: list[DeltaToolCall] = []
    for piece in step.calls:
        if piece.name is not None:  # identity first: id, type and name, then arguments
            out.append(
                DeltaToolCall(
                    id=piece.id, index=piece.index, type="function", function={"name": piece.name}
                )
            )
        if piece.arguments:
            out.append(
                DeltaToolCall(
                    id=None, index=piece.index, type=None, function={"arguments": piece.arguments}
                )
            )
    return out


class ChatfmtResponseParser(BaseResponseParser):
    """LMDeploy's default response parser, parsing with chatfmt when a chatfmt parser is set."""

    def __init__(self, request: Any) -> None:
        tool_cls, reasoning_cls = type(self).tool_parser_cls, type(self).reasoning_parser_cls
        self._chatfmt: EngineStream | None = None
        if not (_is_chatfmt(tool_cls) or _is_chatfmt(reasoning_cls)):
            super().__init__(request)
            return
        if request.tool_choice == "required" or not isinstance(request.tool_choice, str):
            raise UnsupportedFeatureError(
                "chatfmt's LMDeploy parsers read tool calls as the model writes them; "
                "tool_choice 'required' or a named tool needs LMDeploy's own tool parser"
            )
        from lmdeploy.serve.parsers.response_parser import normalize_chat_request
        from lmdeploy.serve.parsers.tool_parser.tool_parser import dump_tools

        tools = request.tools if request.tool_choice != "none" else None
        self._kwargs = type(self).chat_template_kwargs_from_request(request)
        self.enable_thinking = self._kwargs.get("enable_thinking", self._kwargs.get("thinking"))
        self.request = normalize_chat_request(dump_tools(request))
        self.reasoning_parser = reasoning_cls(**self._kwargs) if reasoning_cls else None
        self.tool_parser = tool_cls() if tool_cls else None
        reasoning = _engine_name(reasoning_cls) if self.enable_thinking is not False else None
        self.reasoning_enabled = bool(
            reasoning is not None
            and self.reasoning_parser is not None
            and self.reasoning_parser.starts_in_reasoning_mode()
        )
        plan = engine_plan(
            _engine_name(tool_cls) if tools else None,
            reasoning,
            type(self).tokenizer,
            # LMDeploy's convention: a reasoning model starts in its reasoning block
            prefilled=self.reasoning_enabled if reasoning not in (None, TEMPLATE_NAME) else None,
        )
        self._count_reasoning_tokens(reasoning is not None)
        self._plan = plan
        self._tools = tools
        self._chatfmt = plan.stream(tools, verbatim=True)  # LMDeploy returns the text as written
        self._started = False

    def _count_reasoning_tokens(self, reasoning: bool) -> None:
        """LMDeploy's usage figure: tokens between ``<think>`` and ``</think>`` (by id)."""
        self._mode = self.MODE_REASONING if self.reasoning_enabled else self.MODE_PLAIN
        self._reasoning_open_tag, self._reasoning_close_tag = "<think>", "</think>"
        self.reasoning_parser = self.reasoning_parser if reasoning else None
        try:
            self._initialize_reasoning_token_counter()
        except (KeyError, AttributeError, TypeError):  # markers that are no tokens: no figure
            self.reasoning_tokens = None

    def stream_chunk(
        self, delta_text: str, delta_token_ids: list[int], **kwargs: Any
    ) -> list[tuple[DeltaMessage, bool]]:
        """One engine step: ``(delta, has_tool_calls)`` pairs (reasoning, content, calls)."""
        stream = self._chatfmt
        if stream is None:
            return super().stream_chunk(delta_text, delta_token_ids, **kwargs)
        if not delta_text and not delta_token_ids and not self._started:
            return [(DeltaMessage(role="assistant", content=""), False)]
        self._started = self._started or bool(delta_text)
        self._update_reasoning_tokens(delta_token_ids)
        step = stream.feed(delta_text or "")
        if kwargs.get("final"):
            last = stream.finish()
            step.reasoning += last.reasoning
            step.content += last.content
            step.calls.extend(last.calls)
        out: list[tuple[DeltaMessage, bool]] = []
        if step.reasoning:
            out.append((DeltaMessage(role="assistant", reasoning_content=step.reasoning), False))
        if step.content:
            out.append((DeltaMessage(role="assistant", content=step.content), False))
        calls = _tool_call_deltas(step)
        if calls:
            out.append((DeltaMessage(role="assistant", tool_calls=calls), True))
        return out

    def parse_complete(
        self, text: str, token_ids: list[int] | None = None, **kwargs: Any
    ) -> tuple[str | None, list[ToolCall] | None, str | None]:
        """A whole output: ``(content, tool_calls, reasoning_content)``."""
        if self._chatfmt is None:
            return super().parse_complete(text, token_ids, **kwargs)
        if self.reasoning_tokens is not None:
            self.reasoning_tokens = 0
            self._counting_reasoning_tokens = self.reasoning_enabled
            self._update_reasoning_tokens(token_ids or [])
        found = extract(self._plan, text, tools=self._tools, verbatim=True)
        calls = [
            ToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=c.arguments))
            for c in found.calls
        ]
        return found.content or None, calls or None, found.reasoning


def _class_for(kind: str, parser: EngineParser) -> type:
    return parser_class(ChatfmtToolParser if kind == "tool" else ChatfmtReasoningParser, parser)


def register(replace: bool | Mapping[str, Mapping[str, str]] = False) -> None:
    """Add chatfmt's parsers to LMDeploy's registries (idempotent).

    ``replace``: also point LMDeploy built-in names at chatfmt — ``True`` for
    :data:`BUILTIN_EQUIVALENTS`, or ``{"tool": {builtin: chatfmt_name}, "reasoning": {…}}``.
    """
    registries = {"tool": ToolParserManager, "reasoning": ReasoningParserManager}
    for kind, registry in registries.items():
        for parser in engine_names(kind):
            cls = _class_for(kind, parser)
            if registry.module_dict.get(parser.engine_name) is not cls:
                registry.register_module(name=parser.engine_name, force=True, module=cls)
    if ResponseParserManager.module_dict.get("default") is not ChatfmtResponseParser:
        ResponseParserManager.register_module(
            name="default", force=True, module=ChatfmtResponseParser
        )
    wanted = BUILTIN_EQUIVALENTS if replace is True else (replace or {})
    for kind, pairs in wanted.items():
        for builtin, name in pairs.items():
            cls = _class_for(kind, EngineParser(f"chatfmt-{name}", name))
            original = registries[kind].module_dict.get(builtin)
            if _is_chatfmt(original):
                continue  # replaced already
            if kind == "reasoning":  # keeps the built-in parser's start mode
                cls = type(cls.__name__, (cls,), {"builtin": original, "__module__": __name__})
            registries[kind].register_module(name=builtin, force=True, module=cls)


def _run_server_registered(*args: Any, **kwargs: Any) -> Any:
    """LMDeploy's per-process server entry, after registering (for spawned processes)."""
    register()
    from lmdeploy.serve.openai import launch_server

    return launch_server._run_server(*args, **kwargs)


def main(argv: Sequence[str] | None = None) -> None:
    """Register chatfmt's parsers, then run ``lmdeploy serve`` with ``argv``."""
    register()
    from lmdeploy.serve.openai import launch_server

    # processes that launch_server spawns import LMDeploy afresh: register there as well
    launch_server._run_server = _run_server_registered
    from lmdeploy.cli import run

    sys.argv = ["lmdeploy", "serve", *(sys.argv[1:] if argv is None else argv)]
    run()


if __name__ == "__main__":  # run as a script: register from the importable module
    from chatfmt.integrations.lmdeploy import main as _main

    _main()
