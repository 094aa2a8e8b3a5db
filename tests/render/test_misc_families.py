"""Baichuan2, Vicuna (+ llama.cpp variants), Zephyr and StarChat: official templates and reference outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from chatfmt.errors import UnsupportedFeatureError
from chatfmt.segments import Kind, join

from _support import ROOT, SHARED, conversations, official_render

DATA = ROOT / "src" / "chatfmt" / "data" / "templates"

#: template name -> (official file in chatfmt's data folder, tokens from the model's tokenizer config)
OFFICIAL = {
    "zephyr": ("ollama-tinyllama-1.1b.jinja", {"bos_token": "<s>", "eos_token": "</s>"}),
    "vicuna-newline": (
        "llamacpp-eachadea-vicuna-13b-1.1.jinja",
        {"bos_token": "<s>", "eos_token": "</s>"},
    ),
    "orca-vicuna": ("llamacpp-Orca-Vicuna.jinja", {"bos_token": "<s>", "eos_token": "</s>"}),
}


@pytest.mark.parametrize("name", sorted(OFFICIAL))
@given(conv=conversations(end_with="any", max_turns=4), agp=st.booleans())
def test_matches_official(name: str, conv: dict[str, Any], agp: bool) -> None:
    file, tokens = OFFICIAL[name]
    source = (DATA / file).read_text(encoding="utf-8")
    msgs = conv["messages"]
    tpl = chatfmt.get_template(name)
    expected = official_render(source, msgs, add_generation_prompt=agp, **tokens)
    segs = tpl.segments(msgs, add_generation_prompt=agp)
    assert join(segs) == expected == tpl.render(msgs, add_generation_prompt=agp)
    for s in segs:
        if s.kind is Kind.CONTENT:
            assert s.message is not None and s.text in msgs[s.message]["content"]
        if s.trained:
            assert s.message is not None and msgs[s.message]["role"] == "assistant"


@pytest.mark.parametrize("name", ["zephyr", "vicuna", "baichuan2", "starchat"])
@given(conv=conversations(end_with="user", max_turns=4))
def test_follow_up_turns(name: str, conv: dict[str, Any]) -> None:
    """Prefix through the last reply + the new turn with sequence_start=False == the whole render."""
    tpl = chatfmt.get_template(name)
    msgs = conv["messages"]
    last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=None)
    if last is None:
        return
    segs = tpl.segments(msgs)
    trained = [i for i, s in enumerate(segs) if s.message == last and s.trained]
    # Baichuan2 has no end-of-turn marker: an empty reply leaves only its header.
    end = max(trained or [i for i, s in enumerate(segs) if s.message == last])
    assert join(segs[: end + 1]) + tpl.render(msgs[last + 1 :], sequence_start=False) == join(segs)


def _lmdeploy_renders(name: str) -> dict[str, str]:
    data = json.loads(
        (SHARED / "reference" / "lmdeploy_template_cases.json").read_text(encoding="utf-8")
    )
    return {
        "inputs": data["registry_matrix_inputs"],
        **next(r["renders"] for r in data["registry_matrix"] if r["template"] == name),
    }


@pytest.mark.parametrize("name", ["baichuan2", "vicuna"])
def test_lmdeploy_reference_renders(name: str) -> None:
    ref = _lmdeploy_renders(name)
    inputs: Any = ref["inputs"]
    tpl = chatfmt.get_template(name)
    for key in ("llamacpp_conversation", "no_system_conversation"):
        assert tpl.render(inputs[key]) == ref[key]
    assert tpl.render([{"role": "user", "content": "Hello"}]) == ref["get_prompt_first_turn"]


def test_llamacpp_cases() -> None:
    data = json.loads(
        (SHARED / "reference" / "llamacpp_chat_template_cases.json").read_text(encoding="utf-8")
    )
    cases = {c["name"]: c for c in data["cases"]}
    for case_name, name in [
        ("eachadea/vicuna-13b-1.1", "vicuna-newline"),
        ("Orca-Vicuna", "orca-vicuna"),
    ]:
        assert (
            chatfmt.get_template(name).render(data["conversation"])
            == cases[case_name]["expected_output"]
        )


def test_zephyr_is_official_and_seed_is_starchat() -> None:
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}]
    assert chatfmt.get_template("HuggingFaceH4/zephyr-7b-beta").render(msgs) == (
        "<|system|>\nS</s>\n<|user|>\nHi</s>\n<|assistant|>\n"
    )
    for name in ("starchat", "zephyr-seed", "zephyr-style", "HuggingFaceH4/starchat-beta"):
        assert (
            chatfmt.get_template(name).render(msgs)
            == "<|system|>\nS<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n"
        )
    assert chatfmt.get_template("zephyr").generation_config.stop_words == ("</s>",)


def test_baichuan2_and_vicuna_examples() -> None:
    b2 = chatfmt.get_template("baichuan-inc/Baichuan2-13B-Chat")
    assert b2.render([{"role": "user", "content": "你好"}]) == "<reserved_106>你好<reserved_107>"
    v = chatfmt.get_template("lmsys/vicuna-7b-v1.5")
    assert v.render(
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}],
        add_generation_prompt=False,
    ) == (
        "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
        "detailed, and polite answers to the user's questions. USER: Hi ASSISTANT: Yo</s>"
    )
    with pytest.raises(UnsupportedFeatureError, match="'vicuna' has no tool-call format") as err:
        v.render(
            [
                {"role": "user", "content": "x"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
            ]
        )
    assert (err.value.index, err.value.field) == (1, "tool_calls")
