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


def test_verbatim_keeps_the_whitespace_around_the_markers() -> None:
    """vLLM's reasoning API: the text around the markers as written; chatfmt's default drops
    the whitespace next to them (the template's own newlines). Streamed as whole."""
    text = "<think>\nplan\n\n</think>\n\nanswer"
    plan = stream_plan(None, parser="plain", reasoning_parser="qwen3", thinking_prefilled=False)
    assert (extract(plan, text).reasoning, extract(plan, text).content) == ("plan", "answer")
    got = extract(plan, text, verbatim=True)
    assert (got.reasoning, got.content) == ("\nplan\n\n", "\n\nanswer")
    for chunks in chunkings(text):
        stream = plan.stream(verbatim=True)
        steps = [*(stream.feed(c) for c in chunks), stream.finish()]
        assert "".join(s.reasoning for s in steps) == got.reasoning
        assert "".join(s.content for s in steps) == got.content


def test_catch_up_feeds_what_the_caller_skipped() -> None:
    """A caller that passes the earlier text without feeding it: that text counts as sent,
    and what the parser held back of it comes with the next piece."""
    plan = stream_plan("qwen3", thinking_prefilled=True)
    stream = plan.stream()
    stream.catch_up("plan</thi")  # "plan" decided (counts as sent); "</thi" held back
    step = stream.feed("nk>answer")
    assert (step.reasoning, step.content) == ("", "answer")
    stream = plan.stream()
    stream.catch_up("plan </th")
    step = stream.feed("ese are")  # not a marker after all: the held text is reasoning
    assert step.reasoning == " </these are"
    stream.catch_up("plan </these are")  # what was fed already: nothing to do
    assert stream.feed(" x").reasoning == " x"


def test_an_empty_reasoning_block_is_told_apart_from_none() -> None:
    plan = stream_plan("qwen3", thinking_prefilled=True)
    got = extract(plan, "</think>answer")
    assert (got.reasoning, got.content, got.reasoning_block) == (None, "answer", True)
    got = extract(stream_plan("qwen3", thinking_prefilled=False), "answer")
    assert (got.reasoning, got.reasoning_block) == (None, False)


def test_eager_calls_end_the_reasoning_at_once() -> None:
    """An engine that hands a call to its tool parser as it streams (vLLM) cannot wait for a
    later ``</think>``: with ``eager_calls`` the call marker ends the block at once."""
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    plan = stream_plan(None, parser="plain", reasoning_parser="qwen3", thinking_prefilled=True)
    stream = plan.stream(eager_calls=True)
    step = stream.feed("plan\n" + call[:15])
    assert (step.reasoning, step.content) == ("plan", call[:15])
    held = plan.stream()  # chatfmt's own rule: a </think> may still make it a drafted call
    step = held.feed("plan\n" + call[:15])
    assert (step.reasoning, step.content) == ("plan", "")
    assert held.finish().content == call[:15]
    drafted = extract(plan, f"plan\n{call}</think>ok")
    assert (drafted.reasoning, drafted.content) == (f"plan\n{call}", "ok")
    eager = extract(plan, f"plan\n{call}</think>ok", eager_calls=True)
    assert (eager.reasoning, eager.content) == ("plan", f"{call}</think>ok")
