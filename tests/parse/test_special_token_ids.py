"""Special tokens vs look-alike text with token ids: exact positions, any chunking.

Id sequences are built from ordinary tokens (text that merely spells a marker) and
real special-token ids, with the Qwen3 tokenizer and a small byte-level InternLM2
tokenizer that has the real InternLM2 special-token ids. Chunk texts are cut the way
engines stream them (an incomplete UTF-8 character is released with the next chunk).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _streaming import wire
from chatfmt.errors import ParseError
from chatfmt.parsing import StreamParser, merge_deltas, parse

tokenizers = pytest.importorskip("tokenizers")

QWEN_MARKERS = ("<tool_call>", "</tool_call>", "<think>", "</think>")
INTERN_IDS = {
    "<|im_start|>": 92543,
    "<|im_end|>": 92542,
    "<|action_start|>": 92541,
    "<|action_end|>": 92540,
    "<|interpreter|>": 92539,
    "<|plugin|>": 92538,
}
_MARKER_RE = re.compile("|".join(re.escape(m) for m in (*QWEN_MARKERS, *INTERN_IDS)))


def ids(index: int) -> str:
    return f"call_{index}"


@pytest.fixture(scope="module")
def qwen(shared_dir: Any) -> Any:
    path = shared_dir / "tokenizers" / "qwen3" / "tokenizer.json"
    if not path.exists():
        pytest.skip("no qwen3 tokenizer")
    return tokenizers.Tokenizer.from_file(str(path))


@pytest.fixture(scope="module")
def intern() -> Any:
    """Byte-level BPE without merges (one token per byte) + InternLM2's special tokens."""
    alphabet = sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)} | INTERN_IDS
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False}
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": s,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for s, i in INTERN_IDS.items()
        ],
        "normalizer": None,
        "pre_tokenizer": {**byte_level, "use_regex": True},
        "post_processor": None,
        "decoder": {**byte_level, "use_regex": True},
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    }
    return tokenizers.Tokenizer.from_str(json.dumps(spec))


def ordinary(tok: Any, text: str) -> list[int]:
    """Ids of ``text`` as ordinary tokens: a marker string is cut so it is never one token."""
    out: list[int] = []
    pos = 0
    for m in _MARKER_RE.finditer(text):
        cut = m.start() + 3
        out += tok.encode(text[pos:cut], add_special_tokens=False).ids
        pos = cut
    out += tok.encode(text[pos:], add_special_tokens=False).ids
    assert tok.decode(out, skip_special_tokens=False) == text
    return out


def build(tok: Any, parts: Sequence[tuple[str, str]]) -> tuple[str, list[int]]:
    """``parts`` are ``("text", s)`` (ordinary tokens) or ``("special", marker)``."""
    seq: list[int] = []
    for kind, value in parts:
        seq += ordinary(tok, value) if kind == "text" else [tok.token_to_id(value)]
    return tok.decode(seq, skip_special_tokens=False), seq


def engine_chunks(
    tok: Any, seq: Sequence[int], sizes: Sequence[int]
) -> Iterator[tuple[str, list[int]]]:
    """(text, ids) per group of ``sizes`` tokens; a trailing incomplete character waits."""
    done, k = "", 0
    bounds = []
    for size in sizes:
        if k >= len(seq):
            break
        k = min(len(seq), k + size)
        bounds.append(k)
    if not bounds or bounds[-1] < len(seq):
        bounds.append(len(seq))
    prev = 0
    for k in bounds:
        text = tok.decode(list(seq[:k]), skip_special_tokens=False)
        if k < len(seq):
            text = text.rstrip("\ufffd")
        piece, done = text[len(done) :], text
        yield piece, list(seq[prev:k])
        prev = k


def stream(template: str, chunks: Iterator[tuple[str, list[int]]], **kw: Any) -> dict[str, Any]:
    sp = StreamParser(template, id_factory=ids, **kw)
    deltas = []
    for text, tids in chunks:
        deltas += sp.feed(text, token_ids=tids)
    return merge_deltas(deltas + sp.finish())


CALL = '\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
SPECIAL = {"<tool_call>": 151657, "</tool_call>": 151658}
BODY = '{"name": "get_weather", "arguments": {}}'


# --------------------------------------------------------------------------- Qwen3 (hermes)
def test_tokenizer_has_the_markers(qwen: Any) -> None:
    added = {a.content: a for a in qwen.get_added_tokens_decoder().values()}
    for marker in QWEN_MARKERS:
        assert marker in added and not added[marker].special  # added, but not "special"
    assert qwen.token_to_id("<tool_call>") == 151657


def test_lookalike_then_real_in_one_chunk(qwen: Any) -> None:
    text, seq = build(
        qwen,
        [
            ("text", "Write <tool_call> to call a tool. "),
            ("special", "<tool_call>"),
            ("text", CALL),
            ("special", "</tool_call>"),
        ],
    )
    msg = parse(text, "qwen3", token_ids=seq, tokenizer=qwen, id_factory=ids)
    assert msg["content"] == "Write <tool_call> to call a tool. "
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"]
    assert "error" not in msg["tool_calls"][0]
    # the whole id sequence as one streamed chunk: the same
    assert stream("qwen3", iter([(text, seq)]), tokenizer=qwen) == msg


def test_real_then_lookalike_in_one_chunk(qwen: Any) -> None:
    text, seq = build(
        qwen,
        [
            ("special", "<tool_call>"),
            ("text", '\n{"name": "get_weather", "arguments": {"city": "<tool_call>"}}\n'),
            ("special", "</tool_call>"),
            ("text", " I wrote <tool_call> and </tool_call> above; <tool_call>{}"),
        ],
    )
    msg = parse(text, "qwen3", token_ids=seq, tokenizer=qwen, id_factory=ids)
    assert msg["content"] == " I wrote <tool_call> and </tool_call> above; <tool_call>{}"
    (call,) = msg["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"city": "<tool_call>"}
    assert "error" not in call
    # without ids, the trailing look-alikes would open more (broken) calls
    assert len(parse(text, "qwen3", id_factory=ids)["tool_calls"]) == 3


def test_reasoning_lookalikes(qwen: Any) -> None:
    text, seq = build(
        qwen,
        [
            ("special", "<think>"),
            ("text", "\nI must not print </think> early.\n"),
            ("special", "</think>"),
            ("text", "\n\nThe tag <think> is literal."),
        ],
    )
    msg = parse(text, "qwen3", token_ids=seq, tokenizer=qwen, thinking_prefilled=False)
    assert msg == {
        "role": "assistant",
        "content": "The tag <think> is literal.",
        "reasoning_content": "I must not print </think> early.",
    }
    # a reply that merely starts with the look-alike is content
    text, seq = build(qwen, [("text", "<think> is a tag.")])
    msg = parse(text, "qwen3", token_ids=seq, tokenizer=qwen, thinking_prefilled=False)
    assert msg == {"role": "assistant", "content": "<think> is a tag."}


def test_located_after_a_held_back_character(qwen: Any) -> None:
    """The previous chunk's last token is half of 🫠 (its text comes with this chunk)."""
    parts = [("text", "a🫠 <tool_call> x "), ("special", "<tool_call>"), ("text", CALL)]
    text, seq = build(qwen, [*parts, ("special", "</tool_call>")])
    chunks = list(engine_chunks(qwen, seq, [2, len(seq)]))
    assert chunks[0][0] == "a" and chunks[1][0].startswith("🫠 <tool_call>")
    msg = stream("qwen3", iter(chunks), tokenizer=qwen)
    assert msg == parse(text, "qwen3", token_ids=seq, tokenizer=qwen, id_factory=ids)
    assert msg["content"] == "a🫠 <tool_call> x " and len(msg["tool_calls"]) == 1


def test_cut_special_located_by_the_tokenizer(qwen: Any) -> None:
    """A look-alike completes in a chunk whose special id is for a marker cut at its end."""
    head = ordinary(qwen, "x <tool_call> y ")
    body = ordinary(qwen, BODY)
    chunks = [
        ("x <tool_call> y <tool_", [*head, 151657]),
        ("call>" + BODY, body),
        ("</tool_call>", [151658]),
    ]
    msg = stream("qwen3", iter(chunks), tokenizer=qwen)
    assert msg["content"] == "x <tool_call> y " and len(msg["tool_calls"]) == 1
    assert "error" not in msg["tool_calls"][0]
    # without a tokenizer the complete occurrence takes the id (the documented preference)
    msg = stream("qwen3", iter(chunks), special_token_ids=SPECIAL)
    assert msg["content"] == "x " and msg["tool_calls"][0].get("error")


def test_ids_that_do_not_fit_the_text(qwen: Any) -> None:
    seq = [*ordinary(qwen, "a <tool_call> b"), 151657]
    with pytest.raises(ParseError, match="do not fit"):
        parse("<tool_call> and more text <tool_call>", "qwen3", token_ids=seq, tokenizer=qwen)


#: prose pieces with look-alikes, CJK and emoji (byte-level tokens cut characters)
PROSE = st.lists(
    st.sampled_from(
        [
            "Use ",
            "<tool_call>",
            "</tool_call>",
            "<think>",
            "</think>",
            " tags",
            "好的，",
            "🙂",
            "🫠",
            "\n",
            " {",
            '"x"',
        ]
    ),
    max_size=5,
).map("".join)
ARG = st.sampled_from(["Paris", "<tool_call>", "a </tool_call> b", "東京", "</think>"])


@st.composite
def qwen_outputs(draw: st.DrawFn) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    if draw(st.booleans()):
        parts += [("special", "<think>"), ("text", "\n" + draw(PROSE) + "\n")]
        parts += [("special", "</think>"), ("text", "\n\n")]
    parts.append(("text", draw(PROSE)))
    for _ in range(draw(st.integers(0, 2))):
        args = json.dumps({"city": draw(ARG)}, ensure_ascii=False)
        parts += [("special", "<tool_call>")]
        parts += [("text", '\n{"name": "get_weather", "arguments": ' + args + "}\n")]
        parts += [("special", "</tool_call>"), ("text", draw(PROSE))]
    return [p for p in parts if p[1]]


def oracle(template: str, parts: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Parse without ids, with every look-alike replaced by a placeholder, then put it back."""
    table: dict[str, str] = {}

    def hide(m: re.Match[str]) -> str:
        key = f"@{len(table)}@"
        table[key] = m.group()
        return key

    text = "".join(
        _MARKER_RE.sub(hide, value) if kind == "text" else value for kind, value in parts
    )
    msg = parse(text, template, id_factory=ids, thinking_prefilled=False)
    dumped = json.dumps(msg, ensure_ascii=False)
    for key, value in table.items():
        dumped = dumped.replace(key, json.dumps(value)[1:-1])
    restored: dict[str, Any] = json.loads(dumped)
    return restored


@settings(max_examples=40)
@given(parts=qwen_outputs(), sizes=st.lists(st.integers(1, 12), min_size=1, max_size=30))
def test_qwen_every_chunking_is_exact(
    qwen: Any, parts: list[tuple[str, str]], sizes: list[int]
) -> None:
    text, seq = build(qwen, parts)
    kw: dict[str, Any] = {"tokenizer": qwen, "thinking_prefilled": False}
    whole = parse(text, "qwen3", token_ids=seq, id_factory=ids, **kw)
    assert whole == oracle("qwen3", parts)
    assert stream("qwen3", engine_chunks(qwen, seq, [1] * len(seq)), **kw) == whole
    assert stream("qwen3", engine_chunks(qwen, seq, sizes), **kw) == whole
    # one token per chunk never needs the tokenizer
    one = {"special_token_ids": {m: qwen.token_to_id(m) for m in QWEN_MARKERS}}
    one["thinking_prefilled"] = False
    assert stream("qwen3", engine_chunks(qwen, seq, [1] * len(seq)), **one) == whole


# --------------------------------------------------------------------------- InternLM2
def intern_call(code: bool) -> list[tuple[str, str]]:
    if code:
        return [
            ("special", "<|action_start|>"),
            ("special", "<|interpreter|>"),
            ("text", '\nprint("<|action_end|>")\n'),
            ("special", "<|action_end|>"),
        ]
    return [
        ("special", "<|action_start|>"),
        ("special", "<|plugin|>"),
        ("text", '\n{"name": "get_weather", "parameters": {"city": "<|plugin|>"}}'),
        ("special", "<|action_end|>"),
    ]


@st.composite
def intern_outputs(draw: st.DrawFn) -> list[tuple[str, str]]:
    prose = st.lists(
        st.sampled_from(["Type ", "<|action_start|>", "<|plugin|>", "<|action_end|>", "好", "\n"]),
        max_size=4,
    ).map("".join)
    parts: list[tuple[str, str]] = [("text", draw(prose))]
    for _ in range(draw(st.integers(0, 2))):
        parts += [*intern_call(draw(st.booleans())), ("text", draw(prose))]
    return [p for p in parts if p[1]]


def test_internlm2_lookalike_plugin_call(intern: Any) -> None:
    text, seq = build(
        intern,
        [("text", "Say <|action_start|><|plugin|> to call. "), *intern_call(False), ("text", "ok")],
    )
    msg = parse(text, "internlm2", token_ids=seq, tokenizer=intern, id_factory=ids)
    assert msg["content"] == "Say <|action_start|><|plugin|> to call. ok"
    (call,) = msg["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"city": "<|plugin|>"}
    text, seq = build(intern, [*intern_call(True), ("text", " <|action_start|><|interpreter|>x")])
    code = parse(text, "internlm2", token_ids=seq, tokenizer=intern, id_factory=ids)
    assert code["tool_calls"][0]["code_interpreter"] == {"input": 'print("<|action_end|>")'}
    assert code["content"] == " <|action_start|><|interpreter|>x"


@settings(max_examples=30)
@given(parts=intern_outputs(), sizes=st.lists(st.integers(1, 20), min_size=1, max_size=30))
def test_internlm2_every_chunking_is_exact(
    intern: Any, parts: list[tuple[str, str]], sizes: list[int]
) -> None:
    text, seq = build(intern, parts)
    whole = parse(text, "internlm2", token_ids=seq, tokenizer=intern, id_factory=ids)
    assert whole == oracle("internlm2", parts)
    for chunking in ([1] * len(seq), sizes):
        assert stream("internlm2", engine_chunks(intern, seq, chunking), tokenizer=intern) == whole


# --------------------------------------------------------------------------- ids without a tokenizer
def hermes(chunks: Sequence[tuple[str, list[int] | None]]) -> dict[str, Any]:
    sp = StreamParser(parser="hermes", special_token_ids=SPECIAL, id_factory=ids)
    deltas = []
    for text, tids in chunks:
        deltas += sp.feed(text, token_ids=tids)
    return merge_deltas(deltas + sp.finish())


def test_counts_decide_without_a_tokenizer() -> None:
    # all real: several markers in one multi-token chunk
    msg = hermes([(f"a<tool_call>{BODY}</tool_call>b", [1, 151657, 2, 3, 151658, 4])])
    assert msg["content"] == "ab" and len(msg["tool_calls"]) == 1
    # all look-alikes
    text = f"a<tool_call>{BODY}</tool_call>b"
    assert hermes([(text, [1, 2, 3, 4, 5])]) == {"role": "assistant", "content": text}
    # counted per marker: a real end tag and a look-alike start tag in one chunk
    msg = hermes(
        [("<tool_call>", [151657]), (f"{BODY}</tool_call> see <tool_call>", [2, 151658, 3])]
    )
    assert msg["content"] == " see <tool_call>" and len(msg["tool_calls"]) == 1


def test_mixed_chunk_without_a_tokenizer_is_an_error() -> None:
    text = f"Type <tool_call> then <tool_call>{BODY}</tool_call>"
    seq = [1, 2, 3, 4, 151657, 5, 151658]
    with pytest.raises(ParseError, match="tokenizer="):
        parse(text, parser="hermes", special_token_ids=SPECIAL, token_ids=seq)
    sp = StreamParser(parser="hermes", special_token_ids=SPECIAL, id_factory=ids)
    first = sp.feed("Type ", [1])
    assert wire(first) == [{"content": "Type"}]  # trailing whitespace: held until decided
    with pytest.raises(ParseError, match="2 occurrences of '<tool_call>' but 1 special id"):
        sp.feed(text[5:], seq[1:])
    # nothing of the refused chunk was consumed: it can be fed again, token by token
    deltas = sp.feed("<tool_call> then ", [2, 3]) + sp.feed("<tool_call>", [151657])
    deltas += sp.feed(BODY, [5]) + sp.feed("</tool_call>", [151658]) + sp.finish()
    msg = merge_deltas(first + deltas)
    assert msg["content"] == "Type <tool_call> then " and len(msg["tool_calls"]) == 1


@pytest.mark.parametrize(
    "chunks",
    [
        # id in the chunk where the marker's text completes
        [("a <tool_", [1, 2]), ("call>" + BODY, [151657, 3]), ("</tool_call>", [151658])],
        # id in the chunk where it begins
        [("a <tool_", [1, 151657]), ("call>" + BODY, [3]), ("</tool_call>", [151658])],
        # cut in three, id in the middle piece
        [("a <to", [1]), ("ol_c", [151657]), ("all>" + BODY + "</tool_call>", [3, 151658])],
        # one character per chunk, id with the first
        [("a ", [1]), ("<", [151657]), *[(c, [9]) for c in "tool_call>"], (BODY, [3])],
    ],
)
def test_marker_cut_across_chunks(chunks: list[tuple[str, list[int]]]) -> None:
    msg = hermes(chunks)
    assert msg["content"] == "a " and msg["tool_calls"][0]["function"]["name"] == "get_weather"


def test_cut_lookalikes_and_missing_text() -> None:
    # a look-alike cut across chunks, no special ids: prose
    msg = hermes([("a <tool_", [1, 2]), ("call>" + BODY, [3, 4])])
    assert msg == {"role": "assistant", "content": "a <tool_call>" + BODY}
    # a special id whose text is absent (skip_special_tokens): it does not make a later look-alike real
    msg = hermes([("a ", [1, 151657]), ("b <tool_call>" + BODY, [2, 3, 4])])
    assert msg == {"role": "assistant", "content": "a b <tool_call>" + BODY}
    # a chunk without ids (after ids were given) decides by text
    msg = hermes([("a ", [1]), ("<tool_call>" + BODY, None)])
    assert msg["content"] == "a " and len(msg["tool_calls"]) == 1


def test_a_marker_asked_twice_counts_once() -> None:
    """ChatGLM3 checks ``<|assistant|>`` when ending a code segment and again as a start."""
    text = "interpreter\n```python\nprint(1)\n```<|assistant|>\nDone"
    msg = parse(
        text,
        parser="chatglm3",
        special_token_ids={"<|assistant|>": 64796},
        token_ids=[1, 2, 64796, 3],
        id_factory=ids,
    )
    assert msg["content"] == "Done" and msg["tool_calls"][0]["type"] == "code_interpreter"


def test_chatfmt_tokenizer_adapter(qwen: Any) -> None:
    """``tokenizer=`` may also be a ``chatfmt.tokens`` adapter (ids via ``token_id``)."""

    class Adapter:
        def token_id(self, token: str) -> int | None:
            tid = qwen.token_to_id(token)
            return tid if token in QWEN_MARKERS else None

        def decode(self, seq: Sequence[int]) -> str:
            return str(qwen.decode(list(seq), skip_special_tokens=False))

    text, seq = build(
        qwen,
        [("text", "x <tool_call> y"), ("special", "<tool_call>"), ("text", BODY)],
    )
    msg = parse(text, "qwen3", token_ids=seq, tokenizer=Adapter(), id_factory=ids)
    assert msg["content"] == "x <tool_call> y" and len(msg["tool_calls"]) == 1
