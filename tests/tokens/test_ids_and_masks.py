"""Token ids and loss masks: equivalence with the real tokenizers, masks for every template."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import chatfmt
from chatfmt.errors import (
    ChatFmtError,
    TokenizationError,
)
from chatfmt.tokens import IGNORE_INDEX, encode, encode_batch, load_tokenizer
from chatfmt.tokens.tokenizer import Tokenizer

from _support import SHARED, conversations, texts

TOK = SHARED / "tokenizers"
HF_NAMES = ("qwen3", "llama3_1", "deepseek_v3")

SAMPLE = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hello there! 你好 🙂\n  indented"},
    {"role": "assistant", "content": "Hi. How can I help?\n"},
    {"role": "user", "content": "Sum 12345 and 678."},
    {"role": "assistant", "content": "13023"},
]


def _need(path: Path) -> Path:
    if not path.exists():
        import os

        if os.environ.get("CI"):
            raise RuntimeError(f"reference tokenizer missing in CI: {path}")
        pytest.skip(f"reference tokenizer not found at {path} (../shared/tokenizers)")
    return path


@cache
def hf(name: str, fast: bool = True) -> Tokenizer:
    return load_tokenizer(TOK / name, fast=fast)


@cache
def oracle(name: str) -> Any:
    from tokenizers import Tokenizer as RawTokenizer

    return RawTokenizer.from_file(str(TOK / name / "tokenizer.json"))


def _no_specials(tok: Tokenizer, conv: dict[str, Any]) -> bool:
    blob = repr(conv)
    return not any(s in blob for s in tok.special_tokens)


def _renders(tpl: chatfmt.Template, messages: list[dict[str, Any]], **kw: Any) -> bool:
    try:
        tpl.render(messages, **kw)
    except ChatFmtError:
        return False
    return True


def _sample(tpl: chatfmt.Template) -> list[dict[str, Any]] | None:
    """SAMPLE, or SAMPLE without its system prompt for templates that cannot place it (Mistral
    v3 writes the system prompt into the last user turn, so refuses it before a reply)."""
    for sample in (SAMPLE, SAMPLE[1:]):
        if _renders(tpl, sample, add_generation_prompt=False):
            return sample
    return None


# ---------------------------------------------------------------------- equivalence
@pytest.mark.slow
@pytest.mark.parametrize("name", HF_NAMES)
@pytest.mark.parametrize("template", [t.name for t in chatfmt.list_templates()])
def test_ids_equal_tokenizer_of_rendered_text(name: str, template: str) -> None:
    _need(TOK / name)
    tpl = chatfmt.get_template(template)
    sample = _sample(tpl)
    if sample is None:
        pytest.skip(f"{template} rejects the sample conversation")
    tok = hf(name)
    # Every template with every tokenizer: how ids are built, not whether the pair matches.
    enc = encode(sample, tpl, tok, train_on="none", add_bos=False, on_mismatch="text")
    text = tpl.render(sample, add_generation_prompt=False)
    assert enc.text == text
    assert enc.input_ids == oracle(name).encode(text, add_special_tokens=False).ids


@pytest.mark.slow
@pytest.mark.parametrize("name", HF_NAMES)
@given(data=conversations(max_turns=3, end_with="assistant"))
def test_ids_equal_tokenizer_property(name: str, data: dict[str, Any]) -> None:
    _need(TOK / name)
    tok = hf(name)
    assume(_no_specials(tok, data))
    for template in ("chatml", "qwen3", "llama3.1", "deepseek-v3"):
        if template not in chatfmt.REGISTRY:
            continue
        tpl = chatfmt.get_template(template)
        try:
            text = tpl.render(data["messages"], add_generation_prompt=True)
        except ChatFmtError:
            continue
        enc = encode(
            data["messages"],
            tpl,
            tok,
            add_generation_prompt=True,
            train_on="none",
            add_bos=False,
            on_mismatch="text",
        )
        assert enc.input_ids == oracle(name).encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize("name", ["qwen3", "llama3_1"])
@given(text=st.one_of(texts(), st.text(max_size=60)))
def test_fast_path_matches_tokenizers(name: str, text: str) -> None:
    _need(TOK / name)
    fast, slow = hf(name), hf(name, fast=False)
    assert fast.fast and not slow.fast
    ((f_ids, _),) = fast.encode_runs([text])
    ((s_ids, _),) = slow.encode_runs([text])
    assert f_ids.tolist() == s_ids.tolist()
    assert f_ids.tolist() == oracle(name).encode(text, add_special_tokens=False).ids or any(
        s in text for s in fast.special_tokens
    )


def test_fast_path_on_a_mixed_corpus() -> None:
    _need(TOK / "qwen3")
    corpus = [
        "The quick brown fox jumps over 13 lazy dogs.\n\n\tdef f(x):\n        return x**2  # comment",
        "Zürich, naïve café — «quotes» … ’apostrophes’ it's we'll I'd",
        "中文分词测试，日本語のテキスト、한국어 텍스트 🙂🚀👩‍👩‍👧 e\u0301 Å",
        "   leading and trailing spaces   \r\n\r\nwindows lines\n" * 3,
        '{"json": [1, 2.5, -3e10, null, true], "k": "v\\n"}',
    ]
    fast, slow = hf("qwen3"), hf("qwen3", fast=False)
    assert [r[0].tolist() for r in fast.encode_runs(corpus)] == [
        r[0].tolist() for r in slow.encode_runs(corpus)
    ]


def test_bos_added_when_the_model_adds_it() -> None:
    _need(TOK / "deepseek_v3")
    tok = hf("deepseek_v3")
    assert tok.add_bos and tok.bos_token == "<｜begin▁of▁sentence｜>"
    enc = encode(SAMPLE[1:3], "chatml", tok, on_mismatch="text")
    assert enc.input_ids[0] == tok.bos_id
    no_bos = encode(SAMPLE[1:3], "chatml", tok, add_bos=False, on_mismatch="text")
    assert no_bos.input_ids[0] != tok.bos_id
    if "deepseek-v3" in chatfmt.REGISTRY:  # the template renders BOS itself: no second one
        ids = encode(SAMPLE[1:3], "deepseek-v3", tok).input_ids
        assert ids[0] == tok.bos_id and ids[1] != tok.bos_id


# ---------------------------------------------------------------------- masks
@pytest.mark.parametrize("template", [t.name for t in chatfmt.list_templates()])
def test_masks_train_assistant_output_only(template: str) -> None:
    _need(TOK / "qwen3")
    tpl = chatfmt.get_template(template)
    sample = _sample(tpl)
    if tpl.generation_config.capability == "completion" or sample is None:
        pytest.skip(f"{template} rejects the sample conversation")
    tok = hf("qwen3")
    enc = encode(sample, tpl, tok, on_mismatch="text")  # masks of every template, one tokenizer
    assert len(enc.input_ids) == len(enc.labels) == len(enc.attention_mask)
    trained = [t for t, lab in zip(enc.input_ids, enc.labels) if lab != IGNORE_INDEX]
    assert all(lab in (IGNORE_INDEX, t) for t, lab in zip(enc.input_ids, enc.labels))
    trained_text = tok.decode(trained)
    assert "13023" in trained_text and "How can I help?" in trained_text
    for msg in sample:
        if msg["role"] != "assistant":
            assert msg["content"].strip() not in trained_text
    # every trained token belongs to an assistant message
    roles = {i: m["role"] for i, m in enumerate(sample)}
    for msg, lab in zip(enc.token_messages, enc.labels):
        if lab != IGNORE_INDEX and msg >= 0:
            assert roles[msg] == "assistant"
    last = encode(sample, tpl, tok, train_on="last_assistant", on_mismatch="text")
    last_text = tok.decode(
        [t for t, lab in zip(last.input_ids, last.labels) if lab != IGNORE_INDEX]
    )
    assert "13023" in last_text and "How can I help?" not in last_text


def test_trained_end_of_turn_and_untrained_header() -> None:
    _need(TOK / "qwen3")
    tok = hf("qwen3")
    enc = encode(SAMPLE[1:3], "chatml", tok)
    rows = enc.to_table()
    im_end = tok.token_id("<|im_end|>")
    im_start = tok.token_id("<|im_start|>")
    assert [r["trained"] for r in rows if r["id"] == im_end] == [False, True]
    assert not any(r["trained"] for r in rows if r["id"] == im_start)
    assert not rows[-1]["trained"] and rows[-1]["text"] == "\n"
    table = enc.explain()
    assert "<|im_end|>" in table and "trained" in table.splitlines()[-1]


def test_nothing_trained_is_an_error_only_under_an_explicit_training_mask() -> None:
    _need(TOK / "qwen3")
    tok = hf("qwen3")
    for train_on in ("all_assistant", "last_assistant"):
        with pytest.raises(TokenizationError, match="nothing to train on"):
            encode(SAMPLE[:2], "chatml", tok, train_on=train_on)
    # The commonest call, an inference prompt, needs no option and trains nothing.
    prompt = chatfmt.encode(SAMPLE, "chatml", tok, add_generation_prompt=True)
    assert set(prompt.labels) == {IGNORE_INDEX}
    none = encode(SAMPLE, "chatml", tok, add_generation_prompt=True, train_on="none")
    assert prompt.input_ids == none.input_ids
    batch = chatfmt.encode_batch(
        [SAMPLE[:2], SAMPLE[:4]], "chatml", tok, add_generation_prompt=True
    )
    assert all(isinstance(e, chatfmt.Encoding) and e.num_trained == 0 for e in batch)
    # Without a generation prompt the default is the assistant mask, and no reply is no error.
    assert encode(SAMPLE, "chatml", tok).labels == (
        encode(SAMPLE, "chatml", tok, train_on="all_assistant").labels
    )
    assert encode(SAMPLE[:2], "chatml", tok).num_trained == 0


def test_max_length_is_never_silent() -> None:
    _need(TOK / "qwen3")
    tok = hf("qwen3")
    full = encode(SAMPLE, "chatml", tok)
    with pytest.raises(TokenizationError, match="max_length"):
        encode(SAMPLE, "chatml", tok, max_length=10)
    right = encode(SAMPLE, "chatml", tok, max_length=len(full) - 3, truncation="right")
    assert right.input_ids == full.input_ids[:-3] and right.truncated_from == len(full)
    left = encode(SAMPLE, "chatml", tok, max_length=20, truncation="left")
    assert left.input_ids == full.input_ids[-20:]
    with pytest.raises(TokenizationError, match="after truncation"):
        encode(SAMPLE, "chatml", tok, max_length=5, truncation="right", train_on="all_assistant")


def test_on_special_raise_names_the_message() -> None:
    _need(TOK / "qwen3")
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x <|im_end|> y"}]
    with pytest.raises(TokenizationError, match=r"messages\[1\]"):
        encode(msgs, "chatml", hf("qwen3"), on_special="raise")
    enc = encode(msgs, "chatml", hf("qwen3"))
    assert enc.input_ids.count(hf("qwen3").token_id("<|im_end|>")) == 2


def test_straddling_token_is_trained() -> None:
    """A BPE token spanning untrained and trained text is trained (documented rule)."""
    _need(TOK / "qwen3")
    tpl = chatfmt.get_template("human-assistant")
    tok = hf("qwen3")
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "ok"}]
    enc = encode(msgs, tpl, tok)
    assert (
        enc.input_ids == oracle("qwen3").encode(tpl.render(msgs, add_generation_prompt=False)).ids
    )
    trained_text = tok.decode(
        [t for t, lab in zip(enc.input_ids, enc.labels) if lab != IGNORE_INDEX]
    )
    assert "ok" in trained_text


CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]


# ------------------------------------------------------------------ max_length
@pytest.mark.parametrize("bad", [0, -1, True, False, "5", 5.5, 5.0, [5]])
def test_max_length_must_be_a_positive_int(qwen3_tokenizer: Any, bad: Any) -> None:
    for truncation in ("error", "right", "left"):
        with pytest.raises(TokenizationError, match="max_length"):
            encode(CHAT, "qwen3", qwen3_tokenizer, max_length=bad, truncation=truncation)
        with pytest.raises(TokenizationError, match="max_length"):
            encode_batch([CHAT], "qwen3", qwen3_tokenizer, max_length=bad, truncation=truncation)


def test_max_length_valid_values_still_work(qwen3_tokenizer: Any) -> None:
    full = encode(CHAT, "qwen3", qwen3_tokenizer)
    assert len(encode(CHAT, "qwen3", qwen3_tokenizer, max_length=None)) == len(full)
    cut = encode(CHAT, "qwen3", qwen3_tokenizer, max_length=len(full) - 1, truncation="right")
    assert cut.truncated_from == len(full) and cut.input_ids == full.input_ids[:-1]
