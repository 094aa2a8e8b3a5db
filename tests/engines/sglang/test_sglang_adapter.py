"""chatfmt's SGLang detectors: whole and streamed, registration, the launcher.

Runs in the SGLang venv (``tests/engines/sglang/run.py``); skipped elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("sglang.srt.function_call", reason="SGLang is not installed (its own venv)")

from engine_pieces import launcher_help, qwen3_tokenizer_or_skip
from sglang.srt.entrypoints.openai.protocol import Function, Tool
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser

from chatfmt.integrations import sglang as adapter

ROOT = Path(__file__).resolve().parents[3]
TOOLS = [
    Tool(
        type="function",
        function=Function(
            name="get_weather",
            parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        ),
    )
]
ANSWER = 'Let me look. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
OUTPUT = "<think>\nThe user wants the weather.\n</think>\n\n" + ANSWER


def _streamed(parser: FunctionCallParser, text: str, size: int) -> tuple[str, list[dict]]:
    content, calls = "", {}
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    results = [parser.parse_stream_chunk(piece) for piece in pieces]
    results.append(parser.parse_stream_end())
    for normal, items in results:
        content += normal
        for item in items:
            entry = calls.setdefault(item.tool_index, {"name": None, "arguments": ""})
            if item.name:
                assert entry["name"] is None
                entry["name"] = item.name
            entry["arguments"] += item.parameters
    return content, [calls[i] for i in sorted(calls)]


def test_whole_output():
    adapter.register()
    normal, calls = FunctionCallParser(TOOLS, "chatfmt-hermes").parse_non_stream(ANSWER)
    assert normal == "Let me look."
    assert [(c.name, json.loads(c.parameters), c.tool_index) for c in calls] == [
        ("get_weather", {"city": "Paris"}, 0)
    ]


@pytest.mark.parametrize("size", [1, 4, 9, 1000])
def test_streamed_output_and_end_of_stream_bookkeeping(size):
    adapter.register()
    parser = FunctionCallParser(TOOLS, "chatfmt-hermes")
    content, calls = _streamed(parser, ANSWER, size)
    assert content == "Let me look. "
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    detector = parser.detector
    # what SGLang's serving layer reads at stream end: nothing left to send
    assert detector.prev_tool_call_arr[-1]["arguments"] == detector.streamed_args_for_tool[-1]
    assert detector.streamed_args_for_tool[-1] == calls[-1]["arguments"]


@pytest.mark.parametrize("size", [1, 5, 1000])
def test_reasoning_streamed_and_whole(size):
    adapter.register()
    whole = ReasoningParser("chatfmt-qwen3", True, False).parse_non_stream(OUTPUT)
    assert whole == ("The user wants the weather.", ANSWER)
    parser = ReasoningParser("chatfmt-qwen3", True, False)
    pieces = [parser.parse_stream_chunk(OUTPUT[i : i + size]) for i in range(0, len(OUTPUT), size)]
    pieces.append(parser.parse_stream_end())
    reasoning = "".join(r or "" for r, _ in pieces)
    normal = "".join(n or "" for _, n in pieces)
    assert (reasoning, normal) == whole


def test_reasoning_not_streamed_arrives_whole():
    adapter.register()
    parser = ReasoningParser("chatfmt-qwen3", False, False)
    steps = [parser.parse_stream_chunk(OUTPUT[i : i + 4]) for i in range(0, len(OUTPUT), 4)]
    reasoning = [r for r, _ in steps if r]
    assert reasoning == ["The user wants the weather."]


def test_template_detectors_read_the_models_chat_template():
    tokenizer = qwen3_tokenizer_or_skip()
    adapter.register()
    reasoning, answer = ReasoningParser(
        "chatfmt", True, False, tokenizer=tokenizer
    ).parse_non_stream(OUTPUT)
    assert reasoning == "The user wants the weather."
    parser = FunctionCallParser(TOOLS, "chatfmt", tokenizer=tokenizer)
    normal, calls = parser.parse_non_stream(answer + "<|im_end|>")
    assert (normal, [c.name for c in calls]) == ("Let me look.", ["get_weather"])


def test_registration_is_idempotent_and_replaces_nothing_unasked():
    from sglang.srt.function_call.hermes_detector import HermesDetector

    adapter.register()
    before = dict(FunctionCallParser.ToolCallParserEnum), dict(ReasoningParser.DetectorMap)
    adapter.register()
    assert (
        dict(FunctionCallParser.ToolCallParserEnum),
        dict(ReasoningParser.DetectorMap),
    ) == before
    assert {"chatfmt", "chatfmt-hermes"} <= set(FunctionCallParser.ToolCallParserEnum)
    assert {"chatfmt", "chatfmt-qwen3"} <= set(ReasoningParser.DetectorMap)
    assert FunctionCallParser.ToolCallParserEnum["hermes"] is HermesDetector


@pytest.mark.slow
def test_launcher_registers_then_runs_sglangs_cli():
    # python -m chatfmt.integrations.sglang --help, after the venv's torchvision shim
    out = launcher_help(
        "import cpu_torchvision, runpy, sys; cpu_torchvision.declare(); sys.argv[1:] = ['--help'];"
        " runpy.run_module('chatfmt.integrations.sglang', run_name='__main__', alter_sys=True)",
        Path(__file__).resolve().parent,
    )
    assert "--tool-call-parser" in out
    assert "chatfmt-hermes" in out  # SGLang's fixed choice list took the new names


def test_sglangs_plugin_loader_registers_chatfmt():
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="sglang.srt.plugins") if ep.name == "chatfmt"]
    if not found:
        pytest.skip("chatfmt is not installed in this venv (pip install -e . registers the plugin)")
    assert found[0].load() is adapter.register
