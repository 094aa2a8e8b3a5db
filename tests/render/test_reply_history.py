"""What the gateway returns, it accepts: a parsed reply renders back as the model wrote it.

For every registered template with a tool parser: the model's output is an assistant turn
as the template writes it (text before one or two calls, reasoning before them where the
template keeps reasoning in a tool loop); that output is parsed with the template's parser
and the parsed message is put back as the last assistant turn. Checked: the render does not
fail; nothing is lost (text, call names and arguments, reasoning); the render is the render
of the original turn byte for byte, also followed by a tool result and the next generation
prompt; and where the template's generation prompt starts its turns, the history's render
starts with that prompt and the model's output (an engine's prefix cache matches). Where
an official template writes only the text or only the calls, chatfmt writes the turn the
way the model writes it (docs/rendering.md); ``strict_history=True`` refuses it instead.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chatfmt
from _tool_roundtrip import TOOLS, _closer, continuation
from chatfmt.errors import ChatFmtError, UnsupportedFeatureError
from chatfmt.template import Template

TOOL_TEMPLATES = sorted(t.name for t in chatfmt.list_templates() if t.tool_parser)
HISTORY = [{"role": "user", "content": "What is the weather like in Quito?"}]
#: The calls of a turn: (name, arguments); string values occur nowhere else.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_weather", {"city": "Quito", "days": 3}),
    ("search_web", {"query": "Andes rainfall", "limit": 5}),
]
IDS = ["call00000", "call00001"]  # 9 alphanumerics: valid for Mistral too
REASONING = "The user wants the weather.\nI should call the tool."

#: Text a model writes before its calls: sentences, lines, CJK, and the whitespace around.
texts = st.builds(
    lambda head, body, tail: head + body + tail,
    st.sampled_from(["", "", " ", "\n"]),
    st.sampled_from(
        [
            "Let me check that for you.",
            "Sure!",
            "好的，我来查一下。",
            "I will look up two things:\n1. the weather\n2. the rainfall",
            "Checking the forecast",
        ]
    ),
    st.sampled_from(["", "", "\n", "\n\n", " "]),
)


def assistant(text: str | None, n: int, reasoning: str | None = None) -> dict[str, Any]:
    """An assistant turn with ``text`` and the first ``n`` of :data:`CALLS`."""
    turn: dict[str, Any] = {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {
                "id": IDS[k],
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for k, (name, args) in enumerate(CALLS[:n])
        ],
    }
    if reasoning is not None:
        turn["reasoning_content"] = reasoning
    return turn


#: Templates whose render of a turn is not a continuation of their generation prompt at all:
#: the model's output is the turn's trained text (byte for byte still; only the prefix-cache
#: property (c) cannot hold: the official prompt ends with the tool instructions, which the
#: next prompt writes after the new turns).
NOT_A_CONTINUATION = {"command-r": "tool calls are rendered with the tool instructions after them"}
#: Templates whose official form of a turn with text and calls is not one reply of the model:
#: part of it comes after the end-of-turn marker where a model stops. The official file keeps
#: everything, so chatfmt renders it (the model writes such a reply in its own form, which
#: renders back in the official form, not byte for byte).
NOT_ONE_REPLY = {
    "deepseek-r1-distill-qwen": "the calls, the end of the turn, then the text as a turn",
    "nemotron-nano-v2": "the text as a turn of its own, then the calls as another",
}
#: Templates whose model writes one call per reply (a second one comes after its stop word).
ONE_CALL_PER_REPLY = {
    "gigachat3": "each call is a message of its own",
    "gigachat3.1": "the reply ends at its call",
    "internlm2": "the reply ends at <|action_end|>",
    "internlm3": "the reply ends at <|action_end|>",
}


def model_output(tpl: Template, turn: dict[str, Any]) -> tuple[str, str, str]:
    """(generation prompt, render with ``turn``, what the model wrote for ``turn``).

    The output is what the render adds to the prompt, up to the first end-of-turn stop word
    (where a model stops). A render that is not a continuation of the prompt starts at the
    last marker boundary they share, less what repeats the prompt's own end there (DeepSeek
    V3.2 without thinking: the prompt ends '<think></think>', the turn is written after
    '</think>'); where the prompt opened a reasoning block that the turn does not hold, the
    model first closes it (DeepSeek-R1 distills).
    """
    prompt = tpl.render(HISTORY, add_generation_prompt=True, tools=TOOLS)
    full = tpl.render([*HISTORY, turn], add_generation_prompt=False, tools=TOOLS)
    if tpl.name in NOT_A_CONTINUATION:
        segs = tpl.segments([*HISTORY, turn], add_generation_prompt=False, tools=TOOLS)
        out = "".join(s.text for s in segs if s.trained and s.message == len(HISTORY))
    else:
        out = continuation(prompt, full)
        tail = prompt[len(full) - len(out) :]
        repeated = next(
            (t for k in range(len(tail)) if (t := tail[k:]).strip() and out.startswith(t)), ""
        )
        out = out[len(repeated) :]
        closer = _closer(tail.strip())
        if closer and closer not in out:
            out = closer + out
    stops = [*tpl.generation_config.stop_words, *tpl.generation_config.tool_stop_words]
    hits = [i for w in stops if w and (i := out.find(w)) >= 0]
    return prompt, full, out[: min(hits)] if hits else out


def _calls(msg: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in msg.get("tool_calls") or ()
    ]


def with_ids(turn: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """``turn`` with its calls' ids replaced by ``ids``."""
    calls = [{**call, "id": i} for call, i in zip(turn["tool_calls"], ids, strict=True)]
    return {**turn, "tool_calls": calls}


def check_accepted_back(tpl: Template, turn: dict[str, Any], n: int) -> None:
    """The property of the module doc for one turn (returns early for what the format cannot
    write, or writes in a form no model generates)."""
    try:
        prompt, full, out = model_output(tpl, turn)
    except ChatFmtError as exc:
        assert getattr(exc, "field", None) != "content" or "reasoning_content" in turn, exc
        return  # not writable at all (reasoning the format has no place for, …)
    text = (turn["content"] or "").strip()
    reasoning = (turn.get("reasoning_content") or "").strip()
    if CALLS[n - 1][0] not in out or text not in out:
        # the template writes calls or text where a model stops (after end of turn)
        assert tpl.name in NOT_ONE_REPLY or (n > 1 and tpl.name in ONE_CALL_PER_REPLY), out
        return
    if reasoning and not full.startswith(prompt):
        return  # a turn with reasoning is not what a model prompted this way writes
    # call ids: the ones the model wrote (where it writes them), else new ones
    parsed = chatfmt.parse(out, tpl, tools=TOOLS)
    msg = parsed.to_openai()
    # (a) nothing lost
    assert _calls(msg) == CALLS[:n], out
    assert [c.get("error") for c in msg["tool_calls"]] == [None] * n
    got = msg.get("content") or ""
    if tpl.name == "gpt-oss":  # Harmony writes the text of a tool-call turn as analysis
        got = msg.get("reasoning_content") or ""
    assert got.strip() == text, out
    if reasoning and reasoning in out:
        assert (msg.get("reasoning_content") or "").strip() == reasoning, out
    elif reasoning:
        msg.pop("reasoning_content", None)  # a format that drops reasoning in a tool loop
    # (b) the render is the original's byte for byte (with the call ids the model wrote, where
    # it writes them), and the next turn (tool results, generation prompt) renders
    ids = [c["id"] for c in msg["tool_calls"]]
    if ids != IDS[:n]:
        turn = with_ids(turn, ids)
        full = tpl.render([*HISTORY, turn], add_generation_prompt=False, tools=TOOLS)
    back = tpl.render([*HISTORY, msg], add_generation_prompt=False, tools=TOOLS)
    assert back == full, (out, continuation(prompt, back))
    results = [
        {"role": "tool", "tool_call_id": ids[k], "name": CALLS[k][0], "content": '{"ok": 1}'}
        for k in range(n)
    ]
    following = tpl.render([*HISTORY, msg, *results], tools=TOOLS)
    assert all(name in following for name, _ in CALLS[:n]) and text in following
    # (c) the prefix-cache property, where the generation prompt starts the rendered turn
    if full.startswith(prompt):
        assert back.startswith(prompt + out)


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
@settings(max_examples=5)  # ~75 templates: a few seconds in all
@given(text=texts, n=st.sampled_from([1, 2]), with_reasoning=st.booleans())
def test_parsed_reply_renders_back_as_written(
    name: str, text: str, n: int, with_reasoning: bool
) -> None:
    tpl = chatfmt.get_template(name)
    if tpl.reasoning_parser:  # no whitespace after a reasoning block is content
        text = text.lstrip()
    check_accepted_back(tpl, assistant(text, n, REASONING if with_reasoning else None), n)


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
def test_strict_history_is_the_official_behaviour(name: str) -> None:
    """``strict_history=True`` changes nothing the official template accepts, and refuses
    (naming the message and field) what it would drop: text beside the calls."""
    tpl = chatfmt.get_template(name)
    for turn in (assistant(None, 1), {"role": "assistant", "content": "Sure."}):
        try:
            default = tpl.render([*HISTORY, turn], tools=TOOLS, add_generation_prompt=False)
        except ChatFmtError:
            continue
        try:
            strict = tpl.render(
                [*HISTORY, turn], tools=TOOLS, add_generation_prompt=False, strict_history=True
            )
        except UnsupportedFeatureError as exc:  # the official file drops the calls (LFM2)
            assert (exc.index, exc.field) == (1, "tool_calls[0]") and turn.get("tool_calls")
            continue
        assert strict == default
    turn = assistant("Let me check that for you.", 1)
    try:
        default = tpl.render([*HISTORY, turn], tools=TOOLS, add_generation_prompt=False)
    except ChatFmtError:
        return  # refused either way
    try:
        strict = tpl.render(
            [*HISTORY, turn], tools=TOOLS, add_generation_prompt=False, strict_history=True
        )
    except UnsupportedFeatureError as exc:
        assert (exc.index, exc.field) in ((1, "content"), (1, "tool_calls"), (1, "tool_calls[0]"))
    else:
        assert strict == default  # the official template writes both itself
