"""chatfmt's LMDeploy parsers: whole and streamed, registration, the launcher.

Runs in the LMDeploy venv (``tests/engines/lmdeploy/run.py``); skipped elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("lmdeploy.serve.parsers", reason="LMDeploy is not installed (its own venv)")

from engine_pieces import OUTPUT, TOOLS, launcher_help, qwen3_tokenizer_or_skip
from lmdeploy.serve.openai.protocol import ChatCompletionRequest
from lmdeploy.serve.parsers import ResponseParserManager
from lmdeploy.serve.parsers.reasoning_parser import ReasoningParserManager
from lmdeploy.serve.parsers.tool_parser import ToolParserManager

from chatfmt.integrations import lmdeploy as adapter

ROOT = Path(__file__).resolve().parents[3]


def _parser(tool: str | None, reasoning: str | None, **request: object):
    adapter.register()
    cls = ResponseParserManager.get("default")
    cls.set_parsers(reasoning_parser_name=reasoning, tool_parser_name=tool)
    fields = {"model": "m", "messages": [], "stream": True, "tools": TOOLS, "tool_choice": "auto"}
    fields.update(request)
    return cls(request=ChatCompletionRequest(**fields))


def _streamed(parser, text: str, size: int) -> tuple[str, str, list[dict]]:
    content, reasoning, calls = "", "", {}
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    for n, piece in enumerate(pieces):
        for delta, has_calls in parser.stream_chunk(piece, [], final=n == len(pieces) - 1):
            content += delta.content or ""
            reasoning += delta.reasoning_content or ""
            assert has_calls == bool(delta.tool_calls)
            for call in delta.tool_calls or []:
                entry = calls.setdefault(call.index, {"name": None, "arguments": ""})
                if call.function.name:
                    assert entry["name"] is None and call.id and call.type == "function"
                    entry["name"] = call.function.name
                else:
                    assert entry["name"] is not None  # identity first
                entry["arguments"] += call.function.arguments or ""
    return content, reasoning, [calls[i] for i in sorted(calls)]


def test_whole_output():
    content, calls, reasoning = _parser("chatfmt-hermes", "chatfmt-qwen3").parse_complete(OUTPUT)
    # the text around the markers as written, as LMDeploy's own parsers return it
    assert (content, reasoning) == ("\n\nLet me look. ", "\nThe user wants the weather.\n")
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_streamed_output_adds_up_to_the_whole_one(size):
    whole_content, whole_calls, whole_reasoning = _parser(
        "chatfmt-hermes", "chatfmt-qwen3"
    ).parse_complete(OUTPUT)
    content, reasoning, calls = _streamed(_parser("chatfmt-hermes", "chatfmt-qwen3"), OUTPUT, size)
    assert (content, reasoning) == (whole_content, whole_reasoning)
    assert calls == [
        {"name": c.function.name, "arguments": c.function.arguments} for c in whole_calls
    ]


def test_thinking_switched_off_gives_content():
    parser = _parser(
        "chatfmt-hermes", "chatfmt-qwen3", chat_template_kwargs={"enable_thinking": False}
    )
    content, _calls, reasoning = parser.parse_complete("Just the answer.")
    assert (content, reasoning) == ("Just the answer.", None)


def test_without_chatfmt_parsers_it_is_lmdeploys_own():
    parser = _parser("qwen3", "default")
    assert parser._chatfmt is None
    _content, calls, reasoning = parser.parse_complete(OUTPUT)
    assert reasoning and calls and calls[0].function.name == "get_weather"


def test_template_parser_reads_the_models_chat_template():
    tokenizer = qwen3_tokenizer_or_skip()
    adapter.register()
    cls = ResponseParserManager.get("default")
    cls.set_parsers(
        reasoning_parser_name="chatfmt",
        tool_parser_name="chatfmt",
        tokenizer=tokenizer,
    )
    request = ChatCompletionRequest(
        model="m", messages=[], stream=False, tools=TOOLS, tool_choice="auto"
    )
    content, calls, reasoning = cls(request=request).parse_complete(OUTPUT + "<|im_end|>")
    # the text around the markers as written, as LMDeploy's own parsers return it
    assert (content, reasoning) == ("\n\nLet me look. ", "\nThe user wants the weather.\n")
    assert calls[0].function.name == "get_weather"


def test_registration_is_idempotent_and_replaces_nothing_unasked():
    adapter.register()
    before = (
        dict(ToolParserManager.module_dict),
        dict(ReasoningParserManager.module_dict),
    )
    adapter.register()
    assert (dict(ToolParserManager.module_dict), dict(ReasoningParserManager.module_dict)) == before
    assert "chatfmt" in ToolParserManager.module_dict
    assert "chatfmt-hermes" in ToolParserManager.module_dict
    assert "chatfmt-qwen3" in ReasoningParserManager.module_dict
    assert not issubclass(ToolParserManager.get("qwen3"), adapter.ChatfmtToolParser)
    assert not issubclass(ReasoningParserManager.get("default"), adapter.ChatfmtReasoningParser)


@pytest.mark.slow
def test_launcher_registers_then_runs_lmdeploys_cli():
    # python -m chatfmt.integrations.lmdeploy api_server --help
    out = launcher_help(
        "import runpy, sys; sys.argv[1:] = ['api_server', '--help'];"
        " runpy.run_module('chatfmt.integrations.lmdeploy', run_name='__main__', alter_sys=True)"
    )
    assert "--tool-call-parser" in out
    assert "chatfmt-hermes" in out  # LMDeploy lists its registry in the help
