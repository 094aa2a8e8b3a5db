"""Templates without a tool format, paired with one (``with_tool_format``): Hermes on ChatML is
Qwen2.5's tool format byte for byte, on any base the calls parse back as written, and the
segments, follow-ups and errors behave as for native templates."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _segments import assert_follow_up_continues, assert_segments_consistent
from chatfmt.parsing.derived_format import ToolCallFormat
from chatfmt.segments import Kind, join
from chatfmt.tool_format import (
    PairedTemplate,
    get_tool_format,
    resolve_tool_format,
    tool_format_hint,
    with_tool_format,
)

from _support import TOOLS, conversations

QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
SMOL_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "get_current_weather", "arguments": '{"location": "Paris"}'},
}
ASKED = [{"role": "user", "content": "Weather in Paris?"}]
CALLED = [*ASKED, {"role": "assistant", "content": None, "tool_calls": [CALL]}]
ANSWERED = [*CALLED, {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]


def qwen_comparable(conv: dict[str, Any]) -> dict[str, Any]:
    """The conversation with no call text ending in a newline: Qwen2.5 writes its own newline
    before a call after it; the paired format writes none there (what the model wrote)."""
    msgs = [
        {**m, "content": m["content"].rstrip("\n")} if m.get("tool_calls") and m["content"] else m
        for m in conv["messages"]
    ]
    return {**conv, "messages": msgs}


@given(
    conv=conversations(tools=True, max_turns=3, end_with="any"),
    smol=st.booleans(),
    agp=st.booleans(),
)
def test_hermes_on_chatml_is_qwen25(conv: dict[str, Any], smol: bool, agp: bool) -> None:
    """ChatML + hermes == Qwen2.5 (whose format is Hermes on ChatML); SmolLM2 + hermes is the
    same with SmolLM2's default system prompt in place of Qwen's."""
    conv = qwen_comparable(conv)
    msgs, tools = conv["messages"], conv["tools"]
    if not smol and msgs[0]["role"] != "system":
        msgs = [{"role": "system", "content": "Be brief."}, *msgs]
    paired = with_tool_format("smollm2" if smol else "chatml", "hermes")
    qwen = chatfmt.get_template("qwen2.5").render(msgs, tools=tools, add_generation_prompt=agp)
    if smol:
        qwen = qwen.replace(QWEN_SYSTEM, SMOL_SYSTEM)
    assert paired.render(msgs, tools=tools, add_generation_prompt=agp) == qwen
    segs = paired.segments(msgs, tools=tools, add_generation_prompt=agp)
    assert join(segs) == qwen
    for i, m in enumerate(msgs):  # a call's markup is control text, its name and arguments data
        if m.get("tool_calls"):
            data = [s.text for s in segs if s.message == i and s.kind is Kind.CONTENT]
            fns = [c["function"] for c in m["tool_calls"]]
            named = [part for fn in fns for part in (fn["name"], fn["arguments"])]
            assert data == ([m["content"]] if m["content"] else []) + named
            assert all(s.trained for s in segs if s.message == i and "<tool_call>" in s.text)


@given(
    conv=conversations(tools=True, max_turns=2, end_with="assistant"),
    more=conversations(system=False, tools=True, max_turns=2, end_with="any"),
)
def test_segments_and_follow_up_turns(conv: dict[str, Any], more: dict[str, Any]) -> None:
    paired = with_tool_format("smollm2", "hermes")
    msgs = conv["messages"] + more["messages"]
    assert_segments_consistent(paired, msgs, content_roles=("user", "tool"), tools=TOOLS)
    assert assert_follow_up_continues(paired, msgs, len(conv["messages"]) - 1, tools=TOOLS)


@pytest.mark.parametrize(
    "content", [None, "", "Let me check.", "Let me check.\n", "Two lines:\n\nchecking"]
)
@pytest.mark.parametrize("base", ["smollm2", "chatml", "zephyr"])
def test_a_reply_renders_back_as_the_model_wrote_it(base: str, content: str | None) -> None:
    """A reply of text + a call, parsed by the paired template's parser, renders back byte for
    byte; several calls parse back in order."""
    paired = with_tool_format(base, "hermes")
    second = {**CALL, "id": "c2", "function": {**CALL["function"], "arguments": "{}"}}
    head = paired.render(ASKED, tools=TOOLS)
    for calls in ([CALL], [CALL, second]):
        reply = {"role": "assistant", "content": content, "tool_calls": calls}
        whole = paired.render([*ASKED, reply], tools=TOOLS, add_generation_prompt=False)
        assert whole.startswith(head)
        written = whole[len(head) :]
        stop = next(w for w in paired.generation_config.stop_words if w in written)
        parsed = chatfmt.parse(written[: written.index(stop)], paired, tools=TOOLS)
        assert [c["function"] for c in parsed["tool_calls"]] == [c["function"] for c in calls]
        if len(calls) == 1:
            assert (parsed["content"] or "").strip() == (content or "").strip()
            again = {**reply, "content": parsed["content"]}
            assert paired.render([*ASKED, again], tools=TOOLS, add_generation_prompt=False) == whole


def test_pairing_facts() -> None:
    smol = chatfmt.get_template("smollm2")
    paired = chatfmt.with_tool_format(smol, "hermes")
    assert isinstance(paired, PairedTemplate) and paired.base is smol
    assert paired is with_tool_format("smollm2", "hermes")  # one object per pair
    assert paired.name == "smollm2+hermes" and paired.supports_tools
    assert paired.tool_parser == "hermes" and paired.tool_format is get_tool_format("hermes")
    assert isinstance(paired.tool_call_format, ToolCallFormat)
    assert paired.tool_call_format.call_begin == "<tool_call>"
    assert paired.generation_config is smol.generation_config
    assert paired.info()["tool_format"] == "hermes"
    copy = pickle.loads(pickle.dumps(paired))  # e.g. to a worker process
    assert copy.name == paired.name and copy.render(ANSWERED, tools=TOOLS) == paired.render(
        ANSWERED, tools=TOOLS
    )
    # without tools, calls or results it is the base template
    chat = [{"role": "system", "content": "S"}, *ASKED, {"role": "assistant", "content": "A"}]
    assert paired.render(chat) == smol.render(chat)
    assert paired.render(ASKED, tools=TOOLS) != smol.render(ASKED, tools=TOOLS)


def test_any_jinja_template_can_be_paired() -> None:
    source = (
        "{% for m in messages %}[{{ m.role }}]: {{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant]: {% endif %}"
    )
    paired = with_tool_format(source, "hermes")
    answered = paired.render(ANSWERED, tools=TOOLS)
    assert answered.startswith("[system]: # Tools\n") and answered.endswith(
        "[user]: <tool_response>\nsunny\n</tool_response>\n[assistant]: "
    )
    assert_segments_consistent(paired, ANSWERED, content_roles=("user", "tool"), tools=TOOLS)
    call = "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": "x"}})
    (parsed,) = chatfmt.parse(call + "\n</tool_call>", paired, tools=TOOLS)["tool_calls"]
    assert parsed["function"]["name"] == "search"


def _echo(text: str) -> str:
    """Say ``text`` back."""
    return text


def test_resolve_and_errors() -> None:
    smol, qwen = chatfmt.get_template("smollm2"), chatfmt.get_template("qwen2.5")
    assert resolve_tool_format(smol, None).name == "smollm2+hermes"  # its default pairing
    assert resolve_tool_format(smol, "none") is smol
    assert resolve_tool_format(resolve_tool_format(smol, None), "none") is smol
    assert resolve_tool_format(qwen, None) is qwen  # a template with its own format
    chatml = chatfmt.get_template("chatml")
    assert resolve_tool_format(chatml, None) is chatml  # no default pairing: as is
    assert resolve_tool_format(chatml, "hermes").name == "chatml+hermes"
    with pytest.raises(chatfmt.ChatFmtError, match="its own tool-call format"):
        with_tool_format(qwen, "hermes")
    with pytest.raises(chatfmt.ChatFmtError, match=r"unknown tool format 'nope' .*hermes"):
        with_tool_format(smol, "nope")
    assert "--tool-format" in tool_format_hint() and "hermes" in tool_format_hint()
    with pytest.raises(chatfmt.ValidationError, match="--tool-format NAME"):
        from chatfmt.agent import Agent
        from chatfmt.backends.scripted import ScriptedBackend

        Agent(ScriptedBackend([]), template=smol, tools=[_echo])


def test_paired_errors_name_the_message() -> None:
    paired = with_tool_format("smollm2", "hermes")
    code = {"id": "k", "type": "code_interpreter", "code_interpreter": {"input": "1"}}
    with pytest.raises(chatfmt.UnsupportedFeatureError) as err:
        paired.render([*ASKED, {"role": "assistant", "content": None, "tool_calls": [code]}])
    assert (err.value.index, err.value.field) == (1, "tool_calls[0]")
    with pytest.raises(chatfmt.UnsupportedFeatureError) as cont:
        paired.render(CALLED, continue_final_message=True)
    assert (cont.value.index, cont.value.field) == (1, "tool_calls")
    gemma = with_tool_format("gemma", "hermes")  # no system role: the tool section cannot go
    with pytest.raises(chatfmt.UnsupportedFeatureError) as sys_err:
        gemma.render(ASKED, tools=TOOLS)
    assert (sys_err.value.index, sys_err.value.field) == (None, "tools")
    assert "<tools>" in gemma.render(ASKED, tools=TOOLS, merge_system_into_first_user=True)


def test_the_gateway_can_force_a_call_of_a_paired_template() -> None:
    from chatfmt.gateway.tool_choice import call_opening

    paired = with_tool_format("smollm2", "hermes")
    assert call_opening(paired, {}) == '<tool_call>\n{"name": "'
    rendered = paired.render(ANSWERED, tools=TOOLS)
    assert rendered.endswith(
        "<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert json.loads(rendered.split("<tools>\n")[1].split("\n")[0]) == TOOLS[0]
