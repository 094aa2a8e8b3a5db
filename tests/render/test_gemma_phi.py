"""Gemma 2/3 and Phi-3/3.5/4: byte-identity with the official Jinja templates, errors, segments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from chatfmt.errors import ChatFmtError, RoleOrderError, UnsupportedFeatureError
from chatfmt.segments import Kind, join

from _support import ROOT, SHARED, conversations, official_render, official_source

DATA = ROOT / "src" / "chatfmt" / "data" / "templates"


def data_source(name: str) -> str:
    """An official template as copied into chatfmt's data folder."""
    return (DATA / name).read_text(encoding="utf-8")


#: template name -> (official source, special tokens as the model's tokenizer config sets them)
OFFICIAL: dict[str, tuple[str, dict[str, str]]] = {
    "gemma2": (
        official_source("google-gemma-2-2b-it.jinja"),
        {"bos_token": "<bos>", "eos_token": "<eos>"},
    ),
    "gemma3": (
        data_source("ollama-gemma3-270m.jinja"),
        {"bos_token": "<bos>", "eos_token": "<eos>"},
    ),
    "phi3": (
        data_source("ollama-phi3-3.8b.jinja"),
        {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
    ),
    "phi3.5": (
        official_source("microsoft-Phi-3.5-mini-instruct.jinja"),
        {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
    ),
    "phi4": (
        data_source("llamacpp-phi-4.jinja"),
        {"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>"},
    ),
}


def check_against_official(
    name: str, messages: list[dict[str, Any]], agp: bool, **options: Any
) -> None:
    """chatfmt renders byte-identically, or raises a chatfmt error where the official template raises."""
    source, tokens = OFFICIAL[name]
    tpl = chatfmt.get_template(name)
    try:
        expected = official_render(source, messages, add_generation_prompt=agp, **tokens)
    except Exception:
        with pytest.raises(ChatFmtError):
            tpl.render(messages, add_generation_prompt=agp, **options)
        return
    if name == "gemma3" and [m["role"] for m in messages] == ["system"] and messages[0]["content"]:
        # The system prompt goes into the first user turn; with none it would vanish.
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.render(messages, add_generation_prompt=agp, **options)
        assert (err.value.index, err.value.field) == (0, "content")
        return
    assert tpl.render(messages, add_generation_prompt=agp, **options) == expected
    check_segments(tpl, messages, agp, **options)


def check_segments(
    tpl: chatfmt.Template, messages: list[dict[str, Any]], agp: bool, **options: Any
) -> None:
    segs = tpl.segments(messages, add_generation_prompt=agp, **options)
    assert join(segs) == tpl.render(messages, add_generation_prompt=agp, **options)
    for s in segs:
        assert s.text
        if s.trained:
            assert s.message is not None and messages[s.message]["role"] == "assistant"
        if s.kind is Kind.CONTENT and s.message is not None:
            assert s.text in (messages[s.message]["content"] or "")


def check_follow_up(name: str, messages: list[dict[str, Any]]) -> None:
    """Rendering a prefix through its last reply, then the rest with sequence_start=False, gives the whole."""
    tpl = chatfmt.get_template(name)
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    if last is None or last == len(messages) - 1:
        return
    segs = tpl.segments(messages)
    end = max(i for i, s in enumerate(segs) if s.message == last and s.trained)
    head = join(segs[: end + 1])
    tail = tpl.render(messages[last + 1 :], sequence_start=False)
    assert head + tail == join(segs)


# ------------------------------------------------------------------ differential (hypothesis)
@given(conv=conversations(system=False, end_with="any", max_turns=4), agp=st.booleans())
def test_gemma2_matches_official(conv: dict[str, Any], agp: bool) -> None:
    check_against_official("gemma2", conv["messages"], agp)
    check_follow_up("gemma2", conv["messages"])


@given(conv=conversations(system=True, end_with="any", max_turns=3), agp=st.booleans())
def test_gemma2_system_raises_like_official(conv: dict[str, Any], agp: bool) -> None:
    check_against_official("gemma2", conv["messages"], agp)


@given(conv=conversations(end_with="any", max_turns=4), agp=st.booleans())
def test_gemma3_matches_official(conv: dict[str, Any], agp: bool) -> None:
    check_against_official("gemma3", conv["messages"], agp)
    check_follow_up("gemma3", conv["messages"])


@pytest.mark.parametrize("name", ["phi3", "phi3.5", "phi4"])
@given(conv=conversations(end_with="any", max_turns=4), agp=st.booleans())
def test_phi_matches_official(name: str, conv: dict[str, Any], agp: bool) -> None:
    check_against_official(name, conv["messages"], agp)
    check_follow_up(name, conv["messages"])


_ROLES = st.lists(st.sampled_from(["system", "user", "assistant"]), min_size=1, max_size=5)


@pytest.mark.parametrize("name", ["gemma2", "gemma3"])
@given(roles=_ROLES)
def test_gemma_role_order_errors_match_official(name: str, roles: list[str]) -> None:
    messages = [{"role": r, "content": f" {r} {i} "} for i, r in enumerate(roles)]
    check_against_official(name, messages, True)


# ------------------------------------------------------------------ examples and errors
def test_gemma2_system_error_names_index_and_option() -> None:
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.get_template("gemma2").render(msgs)
    assert err.value.index == 0 and "System role not supported" in str(err.value)


def test_gemma2_alternation_error_index() -> None:
    msgs = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    with pytest.raises(RoleOrderError) as err:
        chatfmt.get_template("gemma2").render(msgs)
    assert err.value.index == 1


def _llamacpp_case(name: str) -> dict[str, Any]:
    data = json.loads(
        (SHARED / "reference" / "llamacpp_chat_template_cases.json").read_text(encoding="utf-8")
    )
    case = next(c for c in data["cases"] if c["name"] == name)
    case["conversation"] = data["conversation"] + case.get("extra_conversation", [])
    return case


def test_gemma_merge_option_reproduces_llamacpp_jinja_path() -> None:
    case = _llamacpp_case("google/gemma-7b-it")
    tpl = chatfmt.get_template("gemma")
    out = tpl.render(case["conversation"], merge_system_into_first_user=True)
    assert out == "<bos>" + case["expected_output_jinja"]
    segs = tpl.segments(case["conversation"], merge_system_into_first_user=True)
    assert [s.text for s in segs if s.message == 0] == ["You are a helpful assistant", "\n"]


@pytest.mark.parametrize(("name", "case_name"), [("phi4", "phi-4"), ("phi3", "Phi-3-small")])
def test_llamacpp_expected_outputs(name: str, case_name: str) -> None:
    case = _llamacpp_case(case_name)
    assert chatfmt.get_template(name).render(case["conversation"]) == case["expected_output_jinja"]


def test_phi_details() -> None:
    msgs = [{"role": "system", "content": ""}, {"role": "user", "content": "Hi"}]
    assert chatfmt.get_template("phi3.5").render(msgs) == "<|user|>\nHi<|end|>\n<|assistant|>\n"
    assert chatfmt.get_template("phi3").render(msgs, add_generation_prompt=False) == (
        "<|system|>\n<|end|>\n<|user|>\nHi<|end|>\n<|endoftext|>"
    )
    # Phi-4 writes the assistant header after every user turn.
    assert (
        chatfmt.get_template("phi4")
        .render(msgs[1:], add_generation_prompt=False)
        .endswith("<|im_start|>assistant<|im_sep|>")
    )
    with pytest.raises(UnsupportedFeatureError):
        chatfmt.get_template("phi4").render(
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


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("google/gemma-2-2b-it", "gemma2"),
        ("google/gemma-2-9b-it", "gemma2"),
        ("google/gemma-7b-it", "gemma2"),
        ("google/gemma-3-4b-it", "gemma3"),
        ("gemma-3-27b-it", "gemma3"),
        ("microsoft/Phi-3-mini-4k-instruct", "phi3"),
        ("microsoft/Phi-3.5-mini-instruct", "phi3.5"),
        ("microsoft/phi-4", "phi4"),
    ],
)
def test_model_lookup(model: str, name: str) -> None:
    tpl = chatfmt.get_template(model)
    assert tpl.name == name
    assert tpl.generation_config.stop_words
    for f in tpl.official_templates:
        assert (DATA / f).is_file()
