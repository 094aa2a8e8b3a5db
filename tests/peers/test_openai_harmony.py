"""Differential tests against ``openai-harmony``, OpenAI's reference implementation of Harmony.

Rendering: the same conversation rendered by openai-harmony (``render_conversation_for_completion``)
and by chatfmt's ``gpt-oss`` template gives the same text. Parsing: model outputs parsed by its
``StreamableParser`` (token by token) and by chatfmt's ``harmony`` parser give the same
channels, recipients and texts.

openai-harmony loads the ``o200k_base`` vocabulary, which it downloads unless it finds
``o200k_base.tiktoken`` in ``$TIKTOKEN_ENCODINGS_BASE``: the tests ship it (gzipped, in
``tests/data``) and point the variable at an unpacked copy.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from chatfmt.parsing import parse

oh = pytest.importorskip("openai_harmony", reason="openai-harmony is not installed")

VOCAB = "o200k_base.tiktoken"


#: OpenAI's o200k_base vocabulary (sha256 446a9538…1a2d, the file openai-harmony downloads),
#: shipped gzipped with the tests so that they run without network access.
VOCAB_GZ = Path(__file__).parent.parent / "data" / (VOCAB + ".gz")


@pytest.fixture(scope="module")
def encoding(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    base = tmp_path_factory.mktemp("tiktoken")
    (base / VOCAB).write_bytes(gzip.decompress(VOCAB_GZ.read_bytes()))
    old = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(base)
    try:
        yield oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        if old is None:
            del os.environ["TIKTOKEN_ENCODINGS_BASE"]
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = old


# Plain text without Harmony special-token look-alikes (the reference tokenizer would read them
# as special tokens).
_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="<\x00"), max_size=12
)
_WORDS = st.sampled_from(["Paris", "weather", " ", "\n", "你好", "🙂", "{", "}", '"'])
TEXT = st.lists(st.one_of(_TEXT, _WORDS), max_size=4).map("".join)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city"},
                "days": {"type": "integer"},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["city"],
        },
    },
}
NO_ARGS = {"type": "function", "function": {"name": "ping", "description": "Ping"}}


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bool]:
    """(OpenAI messages ending where the model answers next, with tools?)."""
    msgs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(TEXT)})
    for _ in range(draw(st.integers(1, 3))):
        msgs.append({"role": "user", "content": draw(TEXT)})
        if draw(st.booleans()):
            msgs.append({"role": "assistant", "content": draw(TEXT)})
    tools = draw(st.booleans())
    if tools and draw(st.booleans()):
        call: dict[str, Any] = {"role": "assistant", "content": None}
        if draw(st.booleans()):
            call["reasoning_content"] = draw(TEXT)
        args = json.dumps({"city": draw(TEXT)}, ensure_ascii=False)
        call["tool_calls"] = [
            {"id": "c0", "type": "function", "function": {"name": "get_weather", "arguments": args}}
        ]
        msgs += [call, {"role": "tool", "tool_call_id": "c0", "content": draw(TEXT)}]
    return msgs, tools


def _reference_conversation(msgs: list[dict[str, Any]], tools: bool, effort: str, day: str) -> Any:
    """The same conversation as openai-harmony messages (what the template keeps of it)."""
    system = (
        oh.SystemContent.new()
        .with_reasoning_effort(oh.ReasoningEffort(effort.capitalize()))
        .with_conversation_start_date(day)
    )
    out = [oh.Message.from_role_and_content(oh.Role.SYSTEM, system)]
    rest = msgs
    instructions = ""
    if msgs and msgs[0]["role"] == "system":
        instructions, rest = msgs[0]["content"], msgs[1:]
    if instructions or tools:
        dev = oh.DeveloperContent.new()
        if instructions:
            dev = dev.with_instructions(instructions)
        if tools:
            dev = dev.with_function_tools(
                [
                    oh.ToolDescription.new(
                        t["function"]["name"],
                        t["function"]["description"],
                        parameters=t["function"].get("parameters"),
                    )
                    for t in (WEATHER, NO_ARGS)
                ]
            )
        out.append(oh.Message.from_role_and_content(oh.Role.DEVELOPER, dev))
    name = ""
    for m in rest:
        if m["role"] == "user":
            out.append(oh.Message.from_role_and_content(oh.Role.USER, m["content"]))
        elif m["role"] == "tool":
            author = oh.Author.new(oh.Role.TOOL, f"functions.{name}")
            out.append(
                oh.Message.from_author_and_content(
                    author, json.dumps(m["content"], ensure_ascii=False)
                )
                .with_channel("commentary")
                .with_recipient("assistant")
            )
        elif m.get("tool_calls"):
            fn = m["tool_calls"][0]["function"]
            name = fn["name"]
            if m.get("reasoning_content"):
                out.append(
                    oh.Message.from_role_and_content(
                        oh.Role.ASSISTANT, m["reasoning_content"]
                    ).with_channel("analysis")
                )
            out.append(
                oh.Message.from_role_and_content(
                    oh.Role.ASSISTANT, json.dumps(json.loads(fn["arguments"]), ensure_ascii=False)
                )
                .with_channel("commentary")
                .with_recipient(f"functions.{name}")
                .with_content_type("json")
            )
        else:
            out.append(
                oh.Message.from_role_and_content(oh.Role.ASSISTANT, m["content"]).with_channel(
                    "final"
                )
            )
    return oh.Conversation.from_messages(out)


@given(conv=conversations(), effort=st.sampled_from(["low", "medium", "high"]))
def test_render_matches_openai_harmony(
    encoding: Any, conv: tuple[list[dict[str, Any]], bool], effort: str
) -> None:
    msgs, tools = conv
    day = "2025-08-05"
    ref = encoding.render_conversation_for_completion(
        _reference_conversation(msgs, tools, effort, day), oh.Role.ASSISTANT
    )
    ours = chatfmt.render(
        msgs,
        "gpt-oss",
        tools=[WEATHER, NO_ARGS] if tools else None,
        reasoning_effort=effort,
        now=dt.date(2025, 8, 5),
    )
    want = encoding.decode_utf8(ref)
    if msgs[0]["role"] == "system" and msgs[0]["content"] and not tools:
        # The one difference: the official template ends the instructions with "\n\n" also
        # when no "# Tools" follow; openai-harmony does not (chatfmt follows the template).
        dev = "<|start|>developer<|message|># Instructions\n\n" + msgs[0]["content"]
        assert want.count(dev + "<|end|>") == 1
        want = want.replace(dev + "<|end|>", dev + "\n\n<|end|>")
    assert ours == want


# ------------------------------------------------------------------ parsing
@st.composite
def outputs(draw: st.DrawFn) -> str:
    """An assistant output after ``<|start|>assistant``: messages on channels, maybe calls."""
    parts = []
    for k in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["analysis", "final", "commentary", "call", "call_in_role"]))
        start = "" if k == 0 else "<|start|>assistant"
        end = "<|end|>"
        if kind in ("call", "call_in_role"):
            args = json.dumps({"city": draw(TEXT)}, ensure_ascii=False)
            recipient = " to=functions." + draw(st.sampled_from(["get_weather", "ping"]))
            ctype = draw(st.sampled_from([" json", " <|constrain|>json", ""]))
            if kind == "call":
                header = "<|channel|>commentary" + recipient + ctype
            else:
                header = recipient + "<|channel|>commentary" + ctype
            parts.append(start + header + "<|message|>" + args + "<|call|>")
            continue
        parts.append(start + "<|channel|>" + kind + "<|message|>" + draw(TEXT) + end)
    return "".join(parts)


def _reference_parse(encoding: Any, text: str) -> tuple[str | None, str | None, list[Any]]:
    parser = oh.StreamableParser(encoding, role=oh.Role.ASSISTANT)
    for token in encoding.encode(text, allowed_special="all"):
        parser.process(token)
    parser.process_eos()
    content, reasoning, calls = [], [], []
    for m in parser.messages:
        body = "".join(c.text for c in m.content)
        if m.recipient:
            calls.append((m.recipient.removeprefix("functions."), body))
        elif m.channel == "analysis":
            reasoning.append(body)
        else:
            content.append(body)
    return "".join(content) or None, "".join(reasoning) or None, calls


@given(text=outputs())
def test_parse_matches_openai_harmony(encoding: Any, text: str) -> None:
    msg = parse(text, "harmony")
    calls = [
        (c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or ()
    ]
    content = msg["content"]
    if calls and content is not None and not content.strip():
        content = None  # whitespace next to calls is not content (chatfmt's policy)
    want_content, want_reasoning, want_calls = _reference_parse(encoding, text)
    if want_calls and want_content is not None and not want_content.strip():
        want_content = None
    assert (content, msg.get("reasoning_content"), calls) == (
        want_content,
        want_reasoning,
        want_calls,
    )


def test_text_beside_a_call_in_history_is_a_commentary_preamble(encoding: Any) -> None:
    """The text of a tool-call message followed by a final reply: the official template drops
    it (with all analysis); chatfmt writes it as openai-harmony renders a commentary-channel
    preamble (issue 22: the last silent drops); ``strict_history=True`` refuses it."""
    call = {
        "id": "c0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    msgs = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "Thanks!"},
    ]
    system = (
        oh.SystemContent.new()
        .with_reasoning_effort(oh.ReasoningEffort.MEDIUM)
        .with_conversation_start_date("2025-08-05")
    )
    tools = [
        oh.ToolDescription.new(
            "get_weather",
            WEATHER["function"]["description"],
            parameters=WEATHER["function"]["parameters"],
        )
    ]
    author = oh.Author.new(oh.Role.TOOL, "functions.get_weather")
    ref = oh.Conversation.from_messages(
        [
            oh.Message.from_role_and_content(oh.Role.SYSTEM, system),
            oh.Message.from_role_and_content(
                oh.Role.DEVELOPER, oh.DeveloperContent.new().with_function_tools(tools)
            ),
            oh.Message.from_role_and_content(oh.Role.USER, "Weather in Paris?"),
            oh.Message.from_role_and_content(oh.Role.ASSISTANT, "Let me check.").with_channel(
                "commentary"
            ),
            oh.Message.from_role_and_content(oh.Role.ASSISTANT, '{"city": "Paris"}')
            .with_channel("commentary")
            .with_recipient("functions.get_weather")
            .with_content_type("json"),
            oh.Message.from_author_and_content(author, '"sunny"')
            .with_channel("commentary")
            .with_recipient("assistant"),
            oh.Message.from_role_and_content(oh.Role.ASSISTANT, "It is sunny.").with_channel(
                "final"
            ),
            oh.Message.from_role_and_content(oh.Role.USER, "Thanks!"),
        ]
    )
    want = encoding.decode_utf8(encoding.render_conversation_for_completion(ref, oh.Role.ASSISTANT))
    ours = chatfmt.render(msgs, "gpt-oss", tools=[WEATHER], now=dt.date(2025, 8, 5))
    assert "<|channel|>commentary<|message|>Let me check.<|end|>" in want
    assert ours == want
    with pytest.raises(chatfmt.errors.UnsupportedFeatureError) as err:
        chatfmt.render(msgs, "gpt-oss", tools=[WEATHER], strict_history=True)
    assert (err.value.index, err.value.field) == (1, "content")
