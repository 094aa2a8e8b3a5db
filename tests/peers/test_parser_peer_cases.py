"""The peer parser cases (vLLM and SGLang test expectations) against chatfmt.parsing.

Every case passes, or differs by a documented policy choice listed in
``POLICY_DIFFERENCES`` (also in docs/parsing.md). Each case is also streamed in
every chunking of ``_streaming.chunkings`` (every single cut of short outputs);
the merged stream must equal ``parse()`` exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _peer_cases import CASES, output_of, parser_of, tools_of
from _streaming import assert_stream_equals_whole

_DROP = "never drop text: "
#: Case id -> why chatfmt deliberately differs from the peer expectation.
POLICY_DIFFERENCES: dict[str, str] = {
    "hermes/non_stream_invalid_json": "a block opened by <tool_call> whose JSON is cut off is a tool call flagged "
    "invalid with its raw text (not content)",
    "llama3/simple_with_surrounding_text": _DROP
    + "text around a JSON call stays content (vLLM discards it)",
    "llama3/multiple_with_surrounding_text": _DROP + "text around JSON calls stays content",
    "llama3/invalid_json": "a JSON object with name and parameters keys is a call; malformed arguments flag it "
    "invalid with the raw text",
    "glm45/mixed_content_two_calls": _DROP
    + "text between two calls stays content (vLLM keeps only the text "
    "before the first call)",
    "glm45/stream_content_with_partial_marker": "a start marker with nothing after it at the end of the stream "
    "is markup, not content",
    "glm45/incomplete_no_close_tag": "a call whose arguments are all complete is valid even if </tool_call> "
    "is missing (same rule as Hermes)",
    "sglang/internlm/finish_truncated_call_DROP": "a block opened by <|action_start|><|plugin|> that is not JSON "
    "is a tool call flagged invalid with its raw text (neither dropped nor content)",
    "sglang/internlm/finish_truncated_call_FLUSH": "same policy as finish_truncated_call_DROP: invalid call, "
    "not content",
    "sglang/internlm/finish_text_before_truncated_marker": "the truncated second block is an invalid call "
    "(raw text 'par') besides the valid one",
    "sglang/qwen25/invalid_json_skipped": "a broken <tool_call> block is an invalid call with its raw text, "
    "not skipped",
    "sglang/qwen25/unknown_tool_skipped": "a call to a tool not in `tools` is kept and flagged invalid "
    "(SGLang drops it)",
    "sglang/qwen25/stream_partial_bot_token_buffered": "held-back text that may start a marker is released as "
    "content at finish() (the case inspects the buffer mid-stream)",
    "sglang/qwen25/stream_stray_eot_stripped": _DROP
    + "a stray </tool_call> in prose stays content",
    "sglang/glm45/invalid_tool_name": "a call to an unknown tool is kept and flagged invalid (SGLang drops it)",
    "sglang/llama3/invalid_then_valid": "the broken first object is an invalid call holding the rest of the "
    "output as raw text (no resynchronisation on a later '{\"name\"')",
    "sglang/base/invalid_tool_resets": "the truncated call to an unknown tool is kept, flagged invalid "
    "(SGLang clears its buffer and loses the text)",
}


def ids(index: int) -> str:
    return f"call_{index}"


def _norm_content(text: str | None) -> str | None:
    return text.strip() or None if text else None


def mismatches(case: dict[str, Any], msg: dict[str, Any]) -> list[str]:
    """How ``msg`` differs from the case's expectation (empty: passes)."""
    problems = []
    if case.get("expected_tool_calls_assertion") == "must_not_raise":
        return problems
    if "expected_content" in case and _norm_content(case["expected_content"]) != _norm_content(
        msg["content"]
    ):
        problems.append(f"content {msg['content']!r} != {case['expected_content']!r}")
    calls = msg.get("tool_calls", [])
    expected = case.get("expected_tool_calls") or []
    if len(calls) != len(expected):
        problems.append(f"{len(calls)} calls != {len(expected)}: {calls}")
        return problems
    for call, exp in zip(calls, expected):
        fn = call["function"]
        if fn["name"] != exp["name"]:
            problems.append(f"name {fn['name']} != {exp['name']}")
        if exp.get("arguments") is None and "arguments_raw" in exp:
            if "error" not in call or fn["arguments"] != exp["arguments_raw"]:
                problems.append(f"expected an invalid call with raw arguments, got {call}")
        elif "error" in call:
            problems.append(f"call flagged invalid: {call}")
        elif json.loads(fn["arguments"]) != exp["arguments"]:
            problems.append(f"arguments {fn['arguments']} != {exp['arguments']}")
    for key in ("expected_arguments_strings", "expected_streamed_arguments"):
        if key in case and [c["function"]["arguments"] for c in calls] != case[key]:
            problems.append(f"{key}: {[c['function']['arguments'] for c in calls]}")
    return problems


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_peer_case(case: dict[str, Any], shared_dir: Path) -> None:
    parser, tools = parser_of(case), tools_of(case)
    text = output_of(case)
    own = case.get("chunks")
    extra = [own] if own and "".join(own) == text else []
    whole = assert_stream_equals_whole(
        text, parser=parser, tools=tools, id_factory=ids, extra=extra
    )
    problems = mismatches(case, whole)
    if case["id"] in POLICY_DIFFERENCES:
        assert problems, f"{case['id']} now passes: remove it from POLICY_DIFFERENCES"
    else:
        assert not problems, problems


def test_policy_list_names_real_cases(shared_dir: Path) -> None:
    assert set(POLICY_DIFFERENCES) <= {c["id"] for c in CASES}
