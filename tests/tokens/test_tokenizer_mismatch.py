"""A tokenizer that does not match the template is an error, checked once per pair."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

import chatfmt
from chatfmt.errors import TokenizationError
from chatfmt.tokens import check_tokenizer, encode, encode_batch, load_tokenizer
from chatfmt.tokens.control import fit
from chatfmt.tokens.tokenizer import Tokenizer

from _support import SHARED

TOK = SHARED / "tokenizers"
GGUF = TOK / "gguf-vocab"
CHAT = [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello!"}]


def _need(path: Path) -> Path:
    if not path.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"reference tokenizer missing in CI: {path}")
        pytest.skip(f"reference tokenizer not found at {path}")
    return path


@cache
def tok(name: str) -> Tokenizer:
    return load_tokenizer(_need(TOK / name))


def test_another_models_tokenizer_raises_naming_the_token() -> None:
    qwen = tok("qwen3")
    pattern = r"does not match template 'llama3\.1'.*'<\|begin_of_text\|>'.*ordinary tokens"
    with pytest.raises(TokenizationError, match=pattern) as info:
        encode(CHAT, "llama3.1", qwen)
    assert qwen.name in str(info.value)
    with pytest.raises(TokenizationError, match=pattern):  # wrong for every item: not per item
        encode_batch([CHAT, CHAT], "llama3.1", qwen, errors="return")
    with pytest.raises(TokenizationError, match=pattern):
        check_tokenizer("llama3.1", TOK / "qwen3")
    with pytest.raises(TokenizationError, match=r"'<\|im_start\|>'"):
        encode(CHAT, "qwen3", tok("llama3_1"))
    with pytest.raises(TokenizationError, match=r"'\[INST\]'"):  # Mistral v3 relies on [INST]
        encode(CHAT, "mistral-v3", load_tokenizer(_need(GGUF / "ggml-vocab-llama-spm.gguf")))


@pytest.mark.parametrize(
    ("tokenizer", "templates"),
    [
        ("qwen3", ["qwen3", "qwen2.5", "qwq", "qwen", "chatml", "yi", "smollm3"]),
        ("llama3_1", ["llama3", "llama3.1", "llama3.2", "llama3.3"]),
        ("deepseek_v3", ["deepseek-v3", "deepseek-v2", "deepseek-coder"]),
        ("gguf-vocab/ggml-vocab-phi-3.gguf", ["phi3", "phi3.5", "starchat"]),
        # Llama 2's [INST] and Zephyr's <|user|> are plain text to their own tokenizers.
        (
            "gguf-vocab/ggml-vocab-llama-spm.gguf",
            ["llama2", "llama2-seed", "mistral-v1", "zephyr", "vicuna", "orca-vicuna"],
        ),
        ("gguf-vocab/ggml-vocab-qwen2.gguf", ["qwen2.5", "chatml", "qwen"]),
    ],
)
def test_matching_pairs_encode_as_before(tokenizer: str, templates: list[str]) -> None:
    t = tok(tokenizer)
    for name in templates:
        check_tokenizer(name, t)
        checked = encode(CHAT, name, t, add_bos=False)
        text = encode(CHAT, name, t, add_bos=False, on_mismatch="text")
        assert checked.input_ids == text.input_ids, name
        assert checked.input_ids == t.encode(checked.text), name


def test_a_control_token_only_some_inputs_write_is_checked_per_conversation() -> None:
    """This Llama 3.1 tokenizer carries Llama 3.0's names: no ``<|python_tag|>``."""
    llama = tok("llama3_1")
    assert llama.token_id("<|python_tag|>") is None
    builtin = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "brave_search", "arguments": {"query": "weather"}},
                }
            ],
        },
    ]
    opts = {"builtin_tools": ["brave_search"]}
    assert encode(CHAT, "llama3.1", llama, **opts).num_trained > 0  # plain chats are fine
    with pytest.raises(TokenizationError, match=r"'<\|python_tag\|>'"):
        encode(builtin, "llama3.1", llama, **opts)
    out = encode_batch([CHAT, builtin], "llama3.1", llama, errors="return", **opts)
    assert isinstance(out[0], chatfmt.Encoding)
    assert isinstance(out[1], TokenizationError) and "<|python_tag|>" in str(out[1])
    as_text = encode(builtin, "llama3.1", llama, on_mismatch="text", **opts)
    assert as_text.input_ids == llama.encode(as_text.text)


def test_on_mismatch_text_encodes_like_the_tokenizer() -> None:
    qwen = tok("qwen3")
    enc = encode(CHAT, "llama3.1", qwen, add_bos=False, on_mismatch="text")
    assert enc.input_ids == qwen.encode(enc.text)
    with pytest.raises(TokenizationError, match="on_mismatch must be raise or text"):
        encode(CHAT, "qwen3", qwen, on_mismatch="ignore")


def test_the_pair_is_checked_once() -> None:
    qwen = tok("qwen3")
    tpl = chatfmt.get_template("llama3.1")
    first = fit(tpl, qwen)
    assert first is fit(tpl, qwen)
    assert "<|begin_of_text|>" in first.written and first.pattern is not None
    assert fit(chatfmt.get_template("qwen3"), qwen).pattern is None
    # The cache does not keep a template alive.
    import gc
    import weakref

    spec = chatfmt.SpecTemplate(
        chatfmt.TemplateSpec(
            name="mismatch-test",
            roles={
                "user": chatfmt.RoleFormat("<|im_start|>user\n", "<|im_end|>\n"),
                "assistant": chatfmt.RoleFormat("<|im_start|>assistant\n", "<|im_end|>\n"),
            },
            control_tokens=("<|im_start|>", "<|im_end|>"),
        )
    )
    assert fit(spec, qwen).written == ()
    ref = weakref.ref(spec)
    del spec
    gc.collect()
    assert ref() is None


def test_jinja_templates_require_only_their_config_tokens() -> None:
    from chatfmt.jinja import JinjaSource, jinja_template

    source = (
        "{% for m in messages %}<|turn|>{{ m.role }}\n{{ m.content }}{{ eos_token }}\n{% endfor %}"
    )
    tpl = jinja_template(JinjaSource(source, {"eos_token": "<|im_end|>"}))
    assert encode(CHAT, tpl, tok("qwen3")).num_trained > 0  # the literal <|turn|> is a guess
    with pytest.raises(TokenizationError, match=r"'<\|im_end\|>'"):
        encode(CHAT, tpl, tok("llama3_1"))


def test_cli_tokenize_with_a_wrong_tokenizer_is_one_line(tmp_path: Path) -> None:
    from chatfmt.cli import app

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"messages": CHAT}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["tokenize", str(src), "-t", "llama3.1", "--no-progress", "-o", str(out)]
    res = CliRunner().invoke(app, [*args, "--tokenizer", str(_need(TOK / "qwen3"))])
    assert res.exit_code != 0
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "<|begin_of_text|>" in lines[0], res.output
    assert "Traceback" not in res.output and not out.exists()
    ok = CliRunner().invoke(app, [*args, "--tokenizer", str(_need(TOK / "llama3_1")), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["samples_out"] == 1
