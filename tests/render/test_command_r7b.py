"""Command R7B: byte-identity with its official templates (tool_use, and the default one of its GGUF),
documents, thinking, tool-call numbering, segments, parsing round trips."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_conv_matches_official
from _segments import assert_follow_up_continues
from _streaming import assert_stream_equals_whole
from chatfmt.errors import ChatFmtError, RoleOrderError, UnsupportedFeatureError, ValidationError
from chatfmt.parsing import parse
from chatfmt.segments import Kind, Segment

from _support import (
    ROOT,
    TOOLS,
    conversations,
    official_source,
    require_shared,
    texts,
    tool_call_lists,
)

TOOL_USE_FILE = "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja"
TOOL_USE = official_source(TOOL_USE_FILE)
BOS = "<BOS_TOKEN>"
TOKENS = {"bos_token": BOS, "eos_token": "<|END_OF_TURN_TOKEN|>"}
DOCS = [
    {"title": "Paris", "text": "Paris is in France."},
    {"title": "你好 🚀", "text": ' <|END_OF_TURN_TOKEN|> "quoted"\n'},
]


def _gguf_default() -> str:
    """The default template of Ollama's command-r7b GGUF, with the BOS chatfmt writes.

    (The GGUF copy leaves BOS to the tokenizer; the tool_use template and Cohere's later
    GGUFs of the same template, e.g. command-r7b-arabic, start with ``{{ bos_token }}``.)
    """
    data = json.loads(
        (require_shared() / "reference" / "ollama_gguf_chat_templates.json").read_text()
    )
    source = next(e["gguf"] for e in data["entries"] if e["model"] == "library/command-r7b:7b")
    return "{{ bos_token }}" + source


DEFAULT = _gguf_default()


def strip_ids(conv: dict[str, Any]) -> dict[str, Any]:
    """The same conversation without call ids (keys absent, as chatfmt's own messages are)."""
    out = copy.deepcopy(conv)
    for m in out["messages"]:
        m.pop("tool_call_id", None)
        for call in m.get("tool_calls") or ():
            call.pop("id", None)
    return out


def dropped(msgs: list[dict[str, Any]]) -> set[tuple[int, str]]:
    """(index, field) of what the official templates drop silently: text beside tool calls
    (a call turn is plan + calls) and reasoning of a reply without calls."""
    lost: set[tuple[int, str]] = set()
    for i, m in enumerate(msgs):
        if m.get("tool_calls") and m.get("content"):
            lost.add((i, "content"))
        elif m["role"] == "assistant" and not m.get("tool_calls") and m.get("reasoning_content"):
            lost.add((i, "reasoning_content"))
    return lost


def _content_is_the_owners(s: Segment, msgs: list[dict[str, Any]]) -> None:
    if s.kind is not Kind.CONTENT or s.message is None:
        return
    owner = msgs[s.message]
    if owner["role"] == "tool":
        assert json.loads(s.text) == owner["content"]
    elif owner.get("content") and not owner.get("tool_calls"):
        assert s.text in owner["content"]


def check(name: str, source: str, conv: dict[str, Any], agp: bool, **options: Any) -> str | None:
    """chatfmt == official (or both reject: chatfmt with a ChatFmtError; or chatfmt refuses,
    naming message and field, what the official template drops silently). Returns the render."""
    return assert_conv_matches_official(
        name,
        source,
        conv,
        agp,
        options=options,
        official_vars=TOKENS,
        dropped=dropped(conv["messages"]),
        segments=True,
        each_segment=_content_is_the_owners,
    )


def check_follow_up(name: str, conv: dict[str, Any], **options: Any) -> None:
    """The tail after a reply the engine holds equals ``sequence_start=False`` of the rest."""
    tpl = chatfmt.get_template(name)
    msgs = conv["messages"]
    last = max(
        (i for i, m in enumerate(msgs) if m["role"] == "assistant" and not m.get("tool_calls")),
        default=None,
    )
    if last is None or last == len(msgs) - 1 or any(m["role"] == "tool" for m in msgs[last:]):
        return  # results after the cut would need the earlier calls to be numbered
    try:
        tpl.segments(msgs, tools=conv["tools"], **options)
    except ChatFmtError:
        return
    assert assert_follow_up_continues(tpl, msgs, last, tools=conv["tools"], **options)


tool_options = st.fixed_dictionaries(
    {},
    optional={
        "enable_thinking": st.booleans(),
        "enable_citations": st.booleans(),
        "documents": st.sampled_from([DOCS, DOCS[:1]]),
    },
)


# ------------------------------------------------------------------ differential tests
@given(conv=conversations(end_with="any", max_turns=4), agp=st.booleans())
def test_default_template_matches_official(conv: dict[str, Any], agp: bool) -> None:
    check("command-r7b", DEFAULT, conv, agp)
    check_follow_up("command-r7b", conv)


@given(conv=conversations(end_with="any", max_turns=3), agp=st.booleans())
def test_documents_branch_of_default_template_matches_official(
    conv: dict[str, Any], agp: bool
) -> None:
    check("command-r7b", DEFAULT, conv, agp, documents=DOCS)


@given(
    conv=conversations(tools=True, reasoning=True, end_with="any", max_turns=3),
    agp=st.booleans(),
    options=tool_options,
    ids=st.booleans(),
)
def test_tool_use_template_matches_official(
    conv: dict[str, Any], agp: bool, options: dict[str, Any], ids: bool
) -> None:
    conv = conv if ids else strip_ids(conv)
    check("command-r7b", TOOL_USE, conv, agp, **options)
    check_follow_up("command-r7b", conv, **options)


@given(conv=conversations(end_with="any", max_turns=3), agp=st.booleans(), options=tool_options)
def test_tool_use_variant_matches_official_without_tools(
    conv: dict[str, Any], agp: bool, options: dict[str, Any]
) -> None:
    # Hugging Face picks the tool_use template only when tools are given (a list, maybe empty);
    # with ``tools=None`` and documents the official template fails iterating None.
    check("command-r7b-tool-use", TOOL_USE, {**conv, "tools": []}, agp, **options)


@given(
    roles=st.lists(st.sampled_from(["system", "user", "assistant"]), min_size=1, max_size=5),
    text=texts(),
)
def test_role_order_matches_official(roles: list[str], text: str) -> None:
    msgs = [{"role": r, "content": f"{text}{i}"} for i, r in enumerate(roles)]
    conv = {"messages": msgs, "tools": None}
    late = [i for i, r in enumerate(roles) if r == "system" and i > 0]
    try:
        check("command-r7b", DEFAULT, conv, True)
    except UnsupportedFeatureError as err:
        # The official default template drops a later system message; chatfmt refuses.
        assert late and (err.index, err.field) == (late[0], "role")
    check("command-r7b", TOOL_USE, {"messages": msgs, "tools": TOOLS}, True)


# ------------------------------------------------------------------ details
def test_prompt_shapes() -> None:
    tpl = chatfmt.get_template("command-r7b")
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi "}]
    assert tpl.render(msgs) == (
        "<BOS_TOKEN><|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Be brief.<|END_OF_TURN_TOKEN|>"
        "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|>"
        "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_RESPONSE|>"
    )
    with_tools = tpl.render(msgs, tools=TOOLS)
    assert with_tools.startswith("<BOS_TOKEN><|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|># System")
    assert "# Developer Preamble" in with_tools and '"name": "search"' in with_tools
    assert with_tools.endswith(
        "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|><|END_THINKING|>"
    )
    thinking = tpl.render(msgs, tools=TOOLS, enable_thinking=True)
    assert thinking.endswith("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>")
    # the tool_use template always opens a chatbot turn, as the official one does
    assert tpl.render(msgs, tools=TOOLS, add_generation_prompt=False) == with_tools


def test_tool_call_numbering_and_grouped_results() -> None:
    """Action ids count calls (after the documents turn); result ids come from ``tool_call_id``."""
    calls = [
        {
            "id": "x",
            "type": "function",
            "function": {"name": "search", "arguments": {"query": "a"}},
        },
        {"id": "y", "type": "function", "function": {"name": "search", "arguments": "{}"}},
    ]
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "y", "content": "second"},
        {"role": "tool", "tool_call_id": "x", "content": "first"},
    ]
    conv = {"messages": msgs, "tools": TOOLS}
    out = check("command-r7b", TOOL_USE, conv, True, documents=DOCS)
    assert out is not None
    assert '{"tool_call_id": "1", "tool_name": "search", "parameters": {"query": "a"}}' in out
    assert '"tool_call_id": "1",\n        "results": {\n            "0": "second"' in out
    assert out.count("<|SYSTEM_TOKEN|><|START_TOOL_RESULT|>") == 2  # documents + one group


@pytest.mark.parametrize("name", ["command-r7b", "command-r7b-tool-use"])
def test_text_beside_calls_and_reply_reasoning_are_refused_not_dropped(name: str) -> None:
    """The official template writes a call turn as plan + calls and a reply as text only."""
    call = {"id": "x", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    tpl = chatfmt.get_template(name)
    beside = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "Let me search.", "tool_calls": [call]},
    ]
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(beside, tools=TOOLS, strict_history=True)
    assert (err.value.index, err.value.field) == (1, "content")
    # by default the text is written as the model writes it, before <|START_ACTION|>
    assert "<|END_THINKING|>Let me search.<|START_ACTION|>" in tpl.render(beside, tools=TOOLS)
    reply = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "reasoning_content": "because"},
    ]
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(reply)
    assert (err.value.index, err.value.field) == (1, "reasoning_content")
    plan = [{**beside[1], "content": None, "reasoning_content": "I will search."}]
    assert "<|START_THINKING|>I will search.<|END_THINKING|>" in tpl.render(beside[:1] + plan)


def test_repeated_result_id_is_skipped_like_the_official_template() -> None:
    calls = [{"id": "same", "type": "function", "function": {"name": "search", "arguments": "{}"}}]
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "same", "content": "a"},
        {"role": "tool", "tool_call_id": "same", "content": "b"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "same", "content": "c"},
    ]
    out = check("command-r7b", TOOL_USE, {"messages": msgs, "tools": TOOLS}, True)
    assert out is not None and '"0": "c"' not in out


def test_errors_name_the_message() -> None:
    tpl = chatfmt.get_template("command-r7b")
    with pytest.raises(RoleOrderError) as exc:
        tpl.render([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert exc.value.index == 1
    with pytest.raises(ValidationError) as exc:
        tpl.render([{"role": "user", "content": None}])
    assert exc.value.index == 0
    code = {"type": "code_interpreter", "code_interpreter": {"input": "print(1)"}}
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [code]}]
    with pytest.raises(UnsupportedFeatureError) as exc:
        tpl.render(msgs, tools=TOOLS)
    assert exc.value.index == 1
    with pytest.raises(UnsupportedFeatureError, match="no code-interpreter tool") as exc:
        tpl.render("q", tools=[{"type": "code_interpreter"}])
    assert (exc.value.index, exc.value.field) == (None, "tools[0].type")
    no_params = {"type": "function", "function": {"name": "f", "description": "d"}}
    with pytest.raises(ValidationError, match="parameters"):
        tpl.render("q", tools=[no_params])
    with pytest.raises(ValidationError, match="documents"):
        tpl.render("q", documents=["plain string"])
    with pytest.raises(chatfmt.errors.TemplateError, match=r"has no option.s. reasoning_effort"):
        tpl.render("q", reasoning_effort="high")


def test_registry_and_config() -> None:
    tpl = chatfmt.get_template("CohereForAI/c4ai-command-r7b-12-2024")
    assert tpl is chatfmt.get_template("cohere2") is chatfmt.get_template("command-r7b")
    assert chatfmt.get_template("command-r") is not tpl
    assert tpl.tool_parser == "command_r" and tpl.supports_tools and tpl.supports_reasoning
    assert tpl.generation_config.stop_words == ("<|END_OF_TURN_TOKEN|>",)
    variant = chatfmt.get_template("command-r7b-tool-use")
    assert variant.official_templates == (TOOL_USE_FILE,)
    data = ROOT / "src" / "chatfmt" / "data" / "templates" / TOOL_USE_FILE
    assert data.read_text(encoding="utf-8") == TOOL_USE


def test_official_file_is_recognized_as_the_tool_use_variant() -> None:
    from chatfmt.jinja import recognize

    assert recognize(TOOL_USE).template is chatfmt.get_template("command-r7b-tool-use")


# ------------------------------------------------------------------ parsing round trips
def generated(messages: list[dict[str, Any]], **options: Any) -> str:
    """The last assistant turn as the model wrote it: its trained text before the stop word."""
    tpl = chatfmt.get_template("command-r7b")
    segs = tpl.segments(messages, tools=TOOLS, add_generation_prompt=False, **options)
    text = "".join(s.text for s in segs if s.trained and s.message == len(messages) - 1)
    return text.split("<|END_OF_TURN_TOKEN|>")[0]


@given(
    calls=tool_call_lists(max_calls=3),
    plan=st.sampled_from(["", "I will search.", "先查天气 🙂"]),
)
def test_tool_calls_round_trip(calls: list[dict[str, Any]], plan: str) -> None:
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": calls, "reasoning_content": plan},
    ]
    text = generated(msgs)
    assert text.startswith("<|START_THINKING|>") and text.endswith("<|END_ACTION|>")
    msg = assert_stream_equals_whole(text, "command-r7b", tools=TOOLS)
    got = [
        (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in msg["tool_calls"]
    ]
    want = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]
    assert got == want
    assert all("error" not in c for c in msg["tool_calls"])
    assert msg.get("reasoning_content", "") == plan
    assert msg["content"] is None


@given(content=texts(min_size=1).filter(lambda t: "<|" not in t))
def test_plain_answer_round_trip(content: str) -> None:
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": content}]
    for tools in (None, TOOLS):
        tpl = chatfmt.get_template("command-r7b")
        segs = tpl.segments(msgs, tools=tools, add_generation_prompt=False)
        text = "".join(s.text for s in segs if s.trained).split("<|END_OF_TURN_TOKEN|>")[0]
        msg = parse(text, tpl, tools=TOOLS)
        assert "tool_calls" not in msg
        expected = content.strip() if tools is None else content
        assert (msg["content"] or "") == expected
