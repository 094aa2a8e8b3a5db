"""The engine-neutral core of the engine plugins: steps, bookkeeping, whole ≡ streamed."""

from __future__ import annotations

from _streaming import chunkings
from chatfmt.integrations.engine_stream import Step, extract, stream_plan, tool_dicts

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]
HERMES = (
    "Let me check.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    "<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
)


def _run(chunks: list[str], target: str = "hermes", **kwargs: object) -> tuple[Step, object]:
    stream = stream_plan(target, **kwargs).stream(TOOLS)  # type: ignore[arg-type]
    total = Step()
    names: dict[int, str] = {}
    args: dict[int, str] = {}
    for step in [*(stream.feed(c) for c in chunks), stream.finish()]:
        total.content += step.content
        total.reasoning += step.reasoning
        for piece in step.calls:
            if piece.name is not None:
                assert piece.index not in names, "a call's name comes once"
                names[piece.index] = piece.name
            args[piece.index] = args.get(piece.index, "") + piece.arguments
    total.calls = []
    return total, (stream, names, args)


def test_bookkeeping_matches_what_was_streamed() -> None:
    whole = extract(stream_plan("hermes"), HERMES, tools=TOOLS)
    for chunks in chunkings(HERMES, every_cut_max=0):
        total, (stream, _names, args) = _run(chunks)
        assert total.content == whole.content
        assert [c["name"] for c in stream.prev_tool_call_arr] == ["get_weather"] * 2
        assert stream.streamed_args_for_tool == [args[0], args[1]]
        assert [c["arguments"] for c in stream.prev_tool_call_arr] == stream.streamed_args_for_tool
        assert stream.current_tool_id == 1
        assert stream.arguments_object(1) == {"city": "Rome"}


def test_whole_is_the_stream_fed_once() -> None:
    plan = stream_plan("hermes")
    got = extract(plan, HERMES, tools=TOOLS)
    assert got.content is not None and got.content.strip() == "Let me check."
    assert [(c.name, c.arguments) for c in got.calls] == [
        ("get_weather", '{"city": "Paris"}'),
        ("get_weather", '{"city": "Rome"}'),
    ]
    assert got.finish_reason == "tool_calls"


def test_a_flagged_call_stays_a_call() -> None:
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    got = extract(stream_plan("hermes"), text, tools=TOOLS, truncated=True)
    assert [c.name for c in got.calls] == ["get_weather"]
    assert got.calls[0].error
    total, (stream, _names, args) = _run([text[:20], text[20:]])
    assert stream.errors and args[0] == stream.streamed_args_for_tool[0]
    assert total.content == ""


def test_reasoning_and_unknown_tool() -> None:
    plan = stream_plan("hermes", reasoning_parser="qwen3")
    got = extract(
        plan, '<think>hmm</think>\n<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>'
    )
    assert got.reasoning == "hmm"
    got = extract(plan, '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>', tools=TOOLS)
    assert got.calls[0].name == "nope" and got.calls[0].error


def test_plans_are_cached_and_tools_converted() -> None:
    assert stream_plan("hermes") is stream_plan("hermes")
    assert stream_plan("hermes") is not stream_plan("hermes", reasoning_parser="qwen3")

    class Fn:
        def model_dump(self, exclude_none: bool = False) -> dict[str, object]:
            return {"type": "function", "function": {"name": "f", "parameters": {}}}

    assert tool_dicts([Fn()]) == [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert tool_dicts(None) is None
