"""Gemma 2/3 and Phi-3/3.5/4: byte-identity with the official Jinja templates, errors, segments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_matches_official
from _segments import assert_follow_up_continues
from chatfmt.errors import RoleOrderError, UnsupportedFeatureError
from chatfmt.segments import Kind, Segment

from _support import ROOT, SHARED, conversations, official_source

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


def check_against_official(name: str, messages: list[dict[str, Any]], agp: bool) -> None:
    """chatfmt renders byte-identically, or raises a chatfmt error where the official template raises."""
    source, tokens = OFFICIAL[name]
    lost: set[tuple[int | None, str]] = set()
    if name == "gemma3" and [m["role"] for m in messages] == ["system"] and messages[0]["content"]:
        lost.add((0, "content"))  # the system prompt goes into the first user turn: none here
    assert_matches_official(
        name,
        source,
        messages,
        add_generation_prompt=agp,
        official_vars=tokens,
        dropped=lost,
        segments=True,
        each_segment=_content_is_the_owners,
    )


def _content_is_the_owners(s: Segment, messages: list[dict[str, Any]]) -> None:
    assert s.text
    if s.kind is Kind.CONTENT and s.message is not None:
        assert s.text in (messages[s.message]["content"] or "")


def check_follow_up(name: str, messages: list[dict[str, Any]]) -> None:
    """Rendering a prefix through its last reply, then the rest with sequence_start=False, gives the whole."""
    tpl = chatfmt.get_template(name)
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    if last is None or last == len(messages) - 1:
        return
    assert assert_follow_up_continues(tpl, messages, last)


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
    with pytest.raises(UnsupportedFeatureError, match="no tool-call or tool-result format") as err:
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
    assert (err.value.index, err.value.field) == (1, "tool_calls")


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
