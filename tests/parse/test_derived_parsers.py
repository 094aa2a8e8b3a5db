"""Parsers derived from a Jinja template (``chatfmt.parsing.derived``).

(a) The cross-check: for templates that have a native parser, a parser derived from
    their official Jinja (a plain ``JinjaTemplate``, so recognition is bypassed) gives
    the same messages as the native parser on that parser's peer cases and on the
    template's own rendered turns, whole and streamed; the cases where it differs
    are listed with the reason (``DIFFERENCES``).
(b) Every reference template without a native parser either derives a parser that
    reads its own rendered tool calls back, parses as plain content (no tool calls
    rendered), or raises the clear ``ParseError`` (``UNKNOWN``, kept exact).
(c) An unclassifiable tool form raises ``ParseError`` naming the template; a template
    without tool support parses as plain content; made-up formats are derived too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import chatfmt
from _peer_cases import CASES as PEER_CASES
from _peer_cases import output_of, parser_of, tools_of
from _streaming import assert_stream_equals_whole, chunkings, streamed
from chatfmt.errors import ParseError
from chatfmt.jinja.template import JinjaTemplate
from chatfmt.parsing import TOOL_PARSERS, StreamParser, end_of_turn_markers, parse
from chatfmt.parsing.derived import DerivedFormat, derive_parser, derived_parsers
from chatfmt.parsing.derived_probe import _shared_head

from _support import TEMPLATES, require_shared

require_shared()


def ids(index: int) -> str:
    return f"call_{index}"


@cache
def official(filename: str) -> JinjaTemplate:
    """The official template as a plain Jinja template, with the special tokens the
    recognized template renders with (recognition bypassed)."""
    path = TEMPLATES / filename
    recognized = chatfmt.get_template(path)
    variables = getattr(getattr(recognized, "jinja", recognized), "variables", {})
    return JinjaTemplate(path.read_text(encoding="utf-8"), variables=variables, origin=filename)


def derived_name(filename: str) -> str:
    tool, _reasoning = derived_parsers(official(filename), {}) or ("plain", None)
    return tool


# ---------------------------------------------------------------------- (a) the cross-check
#: Official template -> the native tool parser whose peer cases it is checked on.
CROSS = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": "hermes",
    "Qwen-Qwen3-0.6B.jinja": "hermes",
    "Qwen-QwQ-32B.jinja": "hermes",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": "hermes",
    "ibm-granite-granite-4.0.jinja": "granite",
    "meta-llama-Llama-3.1-8B-Instruct.jinja": "llama3_json",
    "meta-llama-Llama-3.2-3B-Instruct.jinja": "llama3_json",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": "mistral",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": "mistral",
    "deepseek-ai-DeepSeek-V3.1.jinja": "deepseek_v31",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": "deepseek_v3",
    "GLM-4.6.jinja": "glm45",
    "internlm-internlm2-chat-7b.jinja": "internlm2",
    # packaged official templates with native parsers (no peer cases in ../shared: rendered turns)
    "Qwen3-Coder.jinja": "qwen3_coder",
    "ByteDance-Seed-OSS.jinja": "seed_oss",
    "LFM2.5-8B-A1B.jinja": "lfm2",
}
#: The peer cases of a native parser (the file's own naming of the parser families).
_PEER_FAMILY = {"granite": "hermes"}

_ONLY_LIST = "the template renders only the [TOOL_CALLS][{…}] list form; the native parser also reads the name{…} form"
_ONLY_ARGS = "the template renders only [TOOL_CALLS]name[ARGS]{…}; the native parser also reads the list and name{…} forms"
_PY_TAG = "<|python_tag|> belongs to built-in tools, which the official template renders only for them; a JSON call after it is text to the derived parser"
_PY_TAG_CASES = (
    r"sglang/llama3/(multiple_with_repeated_python_tag|multiple_with_semicolon|python_tag_prefix)"
)
#: Official template -> [(peer case id pattern, why the derived parser differs)].
DIFFERENCES: dict[str, list[tuple[str, str]]] = {
    "meta-llama-Llama-3.1-8B-Instruct.jinja": [(_PY_TAG_CASES, _PY_TAG)],
    "meta-llama-Llama-3.2-3B-Instruct.jinja": [(_PY_TAG_CASES, _PY_TAG)],
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": [(r"mistral/v11_.*", _ONLY_LIST)],
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": [
        (r"mistral/(pre_)?v11_.*|sglang/mistral/(nested_brackets_in_content|simple|text_before)", _ONLY_ARGS)
    ],
    "internlm-internlm2-chat-7b.jinja": [
        (r"(?!.*(no_tool_call|malformed_4|finish_partial_marker_prefix_released)).*",
         "the official template renders no tool calls (InternLM's tool protocol is added by "
         "the serving side), so the derived parser is plain")
    ],
}  # fmt: skip


def _peer_cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for filename, native in CROSS.items():
        family = _PEER_FAMILY.get(native, native)
        out += [(filename, c) for c in PEER_CASES if parser_of(c) == family]
    return out


PEER = _peer_cases()


def _difference(filename: str, case_id: str) -> str | None:
    for pattern, reason in DIFFERENCES.get(filename, ()):
        if re.fullmatch(pattern, case_id):
            return reason
    return None


@cache
def _first_of_format(filename: str) -> bool:
    """Whether ``filename`` is the first cross-check template with its derived format (the
    streaming check runs once per distinct format: the others are the same machine)."""
    key = _format_key(derive_parser(official(filename)))
    for other in CROSS:
        if _format_key(derive_parser(official(other))) == key:
            return other == filename
    return True


def _format_key(fmt: DerivedFormat) -> tuple[Any, ...]:
    fields = dict(fmt.__dict__)
    fields.pop("template")
    fields.pop("notes")
    return tuple(sorted(fields.items()))


@pytest.mark.parametrize(
    ("filename", "case"), PEER, ids=[f"{f.removesuffix('.jinja')}-{c['id']}" for f, c in PEER]
)
def test_cross_check_peer_cases(filename: str, case: dict[str, Any]) -> None:
    native = CROSS[filename]
    text, tools = output_of(case), tools_of(case)
    derived = derived_name(filename)
    got = parse(text, parser=derived, tools=tools, id_factory=ids)
    want = parse(text, parser=native, tools=tools, id_factory=ids)
    reason = _difference(filename, case["id"])
    if reason is not None:
        assert got != want, f"{case['id']} now agrees: remove it from DIFFERENCES ({reason})"
        return
    assert got == want
    if _first_of_format(filename):
        assert_stream_equals_whole(text, parser=derived, tools=tools)


def test_differences_name_real_cases() -> None:
    for filename, entries in DIFFERENCES.items():
        ids_ = [c["id"] for f, c in PEER if f == filename]
        for pattern, _reason in entries:
            assert any(re.fullmatch(pattern, i) for i in ids_), (filename, pattern)


from _turns import HISTORY, TOOLS  # noqa: E402
from _turns import TURNS as _SHARED_TURNS  # noqa: E402

#: the slow tier (`pytest -m "not slow"` leaves it out; CI runs it)
pytestmark = pytest.mark.slow

TURNS: dict[str, dict[str, Any]] = {
    **_SHARED_TURNS,
    "plain": {"role": "assistant", "content": "It is sunny, 22 °C."},
}


def rendered_turn(tpl: Any, turn: dict[str, Any], *, continuation: bool = True) -> str | None:
    """What the template writes for ``turn`` after the generation prompt (None: not a
    continuation, unless ``continuation=False``: then after the text both share)."""
    tools = TOOLS if "tool_calls" in turn else None
    try:
        prompt = tpl.render(HISTORY, add_generation_prompt=True, tools=tools)
        full = tpl.render([*HISTORY, turn], add_generation_prompt=False, tools=tools)
    except chatfmt.ChatFmtError:
        return None  # the format cannot express this turn
    if full.startswith(prompt):
        return full[len(prompt) :]
    return None if continuation else full[_shared_head(prompt, full) :]


ROUND_TRIP = [(f, k) for f in CROSS for k in TURNS]


@pytest.mark.parametrize(("filename", "kind"), ROUND_TRIP, ids=[f"{f}-{k}" for f, k in ROUND_TRIP])
def test_cross_check_rendered_turns(filename: str, kind: str) -> None:
    """The template's own rendered turn: derived (from the plain Jinja) == native (recognized)."""
    tpl = official(filename)
    out = rendered_turn(tpl, TURNS[kind], continuation=False)
    if out is None:
        pytest.skip("the template cannot render this turn")
    out = _after_prefill(tpl, out)
    native = chatfmt.get_template(TEMPLATES / filename)
    want = parse(out, native, tools=TOOLS, id_factory=ids)
    if _first_of_format(filename):
        got = assert_stream_equals_whole(out, tpl, tools=TOOLS)
    else:  # the same machine as an earlier template: whole parse only
        got = parse(out, tpl, tools=TOOLS, id_factory=ids)
    if filename == "internlm-internlm2-chat-7b.jinja":
        assert "tool_calls" not in want  # renders no calls: both plain
    if filename in _WRITES_CALL_IDS:  # the native parser keeps the ids the model wrote
        got, want = _without_ids(got), _without_ids(want)
    assert got == want


#: Templates whose rendered calls hold their ids (``[CALL_ID]``, or an ``"id"`` key after the
#: arguments), which only the native parser reads.
_WRITES_CALL_IDS = frozenset(
    {"Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja"}
)


def _without_ids(msg: Any) -> dict[str, Any]:
    out = msg.to_openai()
    for call in out.get("tool_calls") or ():
        call.pop("id", None)
    return dict(out)


# ---------------------------------------------------------------------- (b) unknown templates
_NO_CALLS = "plain"
#: Reference templates without a native parser -> what derivation gives: an encoding (the
#: template's own calls parse back), "plain" (no tool calls rendered) or "error: <why>".
UNKNOWN: dict[str, str] = {
    "Apertus-8B-Instruct.jinja": "error: call objects keyed by the tool name",
    "Apriel-1.6-15b-Thinker-fixed.jinja": "json_list",
    "Bielik-11B-v3.0-Instruct.jinja": "json_call",
    "ByteDance-Seed-OSS.jinja": "xml_function",
    "Cohere2MoE.jinja": "json_list",
    "GigaChat3-10B-A1.8B.jinja": "error: a call starts with the end-of-turn marker <|message_sep|>",
    "GigaChat3.1-10B-A1.8B.jinja": "json_call",
    "Kimi-K2-Instruct.jinja": "json_arguments",
    "Kimi-K2-Thinking.jinja": "json_arguments",
    "Kimi-K3.jinja": "error: attribute-style calls",
    "GLM-4.7-Flash.jinja": "xml_pairs",
    "LFM2-8B-A1B.jinja": _NO_CALLS,
    "LFM2.5-8B-A1B.jinja": "pythonic",
    "LFM2.5-Instruct.jinja": _NO_CALLS,
    "MiMo-VL.jinja": "json_call",
    "MiniMax-M1.jinja": "json_call",
    "MiniMax-M2.jinja": "error: <invoke name=…><parameter name=…>: no machine for that spelling",
    "MiniMax-M3.jinja": "error: <invoke name=…> with keys as tags: no machine for that spelling",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": "xml_function",
    "NVIDIA-Nemotron-Nano-v2.jinja": "json_list",
    "Qwen3-Coder.jinja": "xml_function",
    "Qwen3.5-4B.jinja": "xml_function",
    "Reka-Edge.jinja": "json_call",
    "Spark2.5.jinja": "xml_pairs",
    "StepFun3.5-Flash.jinja": "xml_function",
    "deepseek-ai-DeepSeek-V3.2.jinja": "error: DSML <invoke>/<parameter name=… string=…>",
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": "error: DSML <invoke>/<parameter name=… string=…>",
    "deepseek-ai-DeepSeek-V4.jinja": "error: DSML <invoke>/<parameter name=… string=…>",
    "fireworks-ai-llama-3-firefunction-v2.jinja": "json_list",
    "google-gemma-4-31B-it-interleaved.jinja": "error: Gemma 4's own value syntax",
    "google-gemma-4-31B-it.jinja": "error: Gemma 4's own value syntax",
    "google-gemma-2-2b-it.jinja": _NO_CALLS,
    "microsoft-Phi-3.5-mini-instruct.jinja": _NO_CALLS,
    "inclusionai-ling-3.0-flash.jinja": "xml_pairs",
    "llama-cpp-deepseek-r1.jinja": "json_arguments",
    "llama-cpp-rwkv-world.jinja": _NO_CALLS,
    "meetkai-functionary-medium-v3.1.jinja": "json_arguments",
    "meetkai-functionary-medium-v3.2.jinja": "error: the first call's marker is in the generation prompt",
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": "json_arguments",
    "moonshotai-Kimi-K2.jinja": "json_arguments",
    "muse-glimmer.jinja": "error: a recipient header and <atem:invoke> parameters",
    "openai-gpt-oss-120b.jinja": "error: Harmony channels",
    "openbmb-MiniCPM5-1B.jinja": "error: <function name=…><param name=…>: no machine for that spelling",
    "poolside-Laguna-S-2.1.jinja": "xml_pairs",
    "poolside-Laguna-XS-2.1.jinja": "xml_pairs",
    "poolside-Laguna-XS.2.jinja": "xml_pairs",
    "tencent-Hy3.jinja": "error: a calls block, <tool_sep> after the name and namespaced pair tags",
    "unsloth-Apriel-1.5.jinja": "json_list",
    "upstage-Solar-Open-100B.jinja": "json_arguments",
}


@pytest.mark.slow  # recognizes every reference template
def test_unknown_list_covers_every_template_without_a_parser() -> None:
    """Every reference template without a native or packaged parser has its expected outcome
    here (a template that gains a parser keeps its entry: derivation bypasses recognition)."""
    without_parser = {
        path.name
        for path in TEMPLATES.glob("*.jinja")
        if chatfmt.get_template(path).tool_parser is None
    }
    assert without_parser <= set(UNKNOWN)
    assert set(UNKNOWN) <= {p.name for p in TEMPLATES.glob("*.jinja")}


def _outcome(tpl: JinjaTemplate) -> str:
    try:
        fmt = derive_parser(tpl)
    except ParseError as exc:
        assert tpl.name in str(exc) and "cannot derive a tool-call parser" in str(exc)
        return "error"
    return fmt.encoding or _NO_CALLS


def _machine_available(encoding: str) -> bool:
    """Whether the family machine an encoding is built on is in this build."""
    module = {"xml_function": "qwen3_coder", "pythonic": "pythonic"}.get(encoding)
    return module is None or importlib.util.find_spec(f"chatfmt.parsing.{module}") is not None


@pytest.mark.parametrize("filename", sorted(UNKNOWN))
def test_unknown_template(filename: str) -> None:
    tpl = official(filename)
    expected = UNKNOWN[filename]
    if not _machine_available(expected):
        with pytest.raises(ParseError, match="no parser machine for them is available"):
            derive_parser(tpl)
        pytest.skip(f"the {expected} machine is not in this build")
    assert _outcome(tpl) == expected.split(":")[0]
    if expected.startswith("error"):
        with pytest.raises(ParseError, match=re.escape(tpl.name)):
            parse("Hello", tpl)
        return
    if expected == _NO_CALLS:
        assert parse("Hello <tool_call>", tpl)["content"] == "Hello <tool_call>"
        return
    parsed_any = False
    for kind in ("call", "text+call", "two calls"):
        turn = TURNS[kind]
        out = rendered_turn(tpl, turn, continuation=False)
        if out is None:
            continue
        out = _after_prefill(tpl, out)
        hits = [i for w in end_of_turn_markers(tpl) if (i := out.find(w)) >= 0]
        turn_text = out[: min(hits)] if hits else out  # where the model stops
        if turn_text.count("get_weather") < len(turn["tool_calls"]):
            continue  # the template writes fewer calls per turn, or the text in a message of its own
        msg = parse(out, tpl, tools=TOOLS, id_factory=ids)
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in msg["tool_calls"]
        ]
        assert calls == [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in turn["tool_calls"]
        ]
        assert all("error" not in c for c in msg["tool_calls"])
        if turn["content"] and turn["content"] in turn_text:
            assert (msg["content"] or "").strip() == turn["content"]
        else:  # GLM-4.7's template writes a null content as the text "None"
            assert (msg["content"] or "").strip() in ("", "None" if "None" in turn_text else "")
        parsed_any = True
        if len(out) <= 200:
            for chunks in chunkings(out):
                assert streamed(chunks, tpl, tools=TOOLS, id_factory=ids) == msg
    assert parsed_any


def _after_prefill(tpl: Any, out: str) -> str:
    """A generation prompt that opens the reasoning block: the model closes it, then writes the turn."""
    fmt = derive_parser(tpl)
    if fmt.reasoning is None:
        return out
    opener, closer = fmt.reasoning
    prompt = tpl.render(HISTORY, add_generation_prompt=True, tools=TOOLS)
    if prompt.rstrip().endswith(opener) and closer not in out:
        return closer + "\n" + out
    return out


def test_every_template_with_tool_calls_parses_them_or_says_why() -> None:
    """The count the issue asks for: templates whose tool calls a native or derived parser reads."""
    derived = [f for f, v in UNKNOWN.items() if not v.startswith("error") and v != _NO_CALLS]
    errors = [f for f, v in UNKNOWN.items() if v.startswith("error")]
    assert derived and errors
    assert len(derived) + len(errors) + list(UNKNOWN.values()).count(_NO_CALLS) == len(UNKNOWN)


# ---------------------------------------------------------------------- (c) made-up templates
_CHATML = (
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n"
    "{%- if m.reasoning_content %}<reason>{{ m.reasoning_content }}</reason>{% endif %}"
    "{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] %}{CALL}{% endfor %}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _made_up(call: str) -> JinjaTemplate:
    return JinjaTemplate(_CHATML.replace("{CALL}", call), origin="made-up.jinja")


def test_made_up_name_and_json_arguments() -> None:
    """A format no family uses: ``<<call>>NAME##{args}<</call>>`` with ``<reason>`` reasoning."""
    tpl = _made_up("<<call>>{{ c.function.name }}##{{ c.function.arguments | tojson }}<</call>>")
    fmt = derive_parser(tpl)
    assert (fmt.encoding, fmt.call_begin, fmt.name_sep, fmt.call_end) == (
        "json_arguments",
        "<<call>>",
        "##",
        "<</call>>",
    )
    assert fmt.reasoning == ("<reason>", "</reason>")
    assert "json_arguments" in fmt.describe() and "'<reason>'" in fmt.describe()
    text = (
        '<reason>Hm.</reason>Sure. <<call>>get_weather##{"city": "Oslo"}<</call>><|im_end|>\nmore'
    )
    msg = assert_stream_equals_whole(text, tpl, tools=TOOLS)
    assert msg["reasoning_content"] == "Hm."
    assert msg["content"] == "Sure. "
    assert msg["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Oslo"}',
    }
    broken = parse('<<call>>get_weather##{"city": <</call>>', tpl, tools=TOOLS)
    assert "error" in broken["tool_calls"][0]  # flagged, raw text kept
    assert broken["tool_calls"][0]["function"]["arguments"].startswith('{"city": ')


def test_made_up_json_call_object() -> None:
    tpl = _made_up(
        '<fn>{"tool": {{ c.function.name | tojson }}, "args": {{ c.function.arguments | tojson }}}</fn>'
    )
    fmt = derive_parser(tpl)
    assert (fmt.encoding, fmt.call_begin, fmt.call_end, fmt.name_key, fmt.args_key) == (
        "json_call",
        "<fn>",
        "</fn>",
        "tool",
        "args",
    )
    text = 'x<fn>{"tool": "get_weather", "args": {"city": "Oslo"}}</fn><fn>{"tool": "f", "args": {}}</fn>'
    msg = assert_stream_equals_whole(text, tpl, tools=TOOLS)
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather", "f"]
    assert msg["tool_calls"][1]["error"] == "unknown tool 'f'"


def test_unclassifiable_form_raises_naming_the_template() -> None:
    tpl = _made_up(
        "CALL {{ c.function.name }} WITH "
        "{% for k, v in c.function.arguments.items() %}{{ k }}:{{ v }} {% endfor %}"
    )
    with pytest.raises(ParseError, match=r"made-up\.jinja.*CALL chatfmt_probe_fn WITH"):
        derive_parser(tpl)
    with pytest.raises(ParseError, match=r"made-up\.jinja"):
        StreamParser(tpl)
    # a parser named explicitly still works with the template's end-of-turn marker
    assert parse("Hi<|im_end|>", tpl, parser="hermes")["content"] == "Hi"


def test_template_without_tool_support_is_plain() -> None:
    tpl = JinjaTemplate(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
        origin="plain.jinja",
    )
    fmt = derive_parser(tpl)
    assert fmt.encoding is None and fmt.reasoning is None
    assert "none rendered" in fmt.describe()
    msg = parse('<tool_call>{"name": "f", "arguments": {}}</tool_call><|im_end|>', tpl)
    assert msg == {
        "role": "assistant",
        "content": '<tool_call>{"name": "f", "arguments": {}}</tool_call>',
    }


def test_derivation_is_cached_and_kept_out_of_the_registry() -> None:
    tpl = official("Qwen-Qwen3-0.6B.jinja")
    first = derive_parser(tpl)
    assert derive_parser(tpl) is first
    assert derive_parser(JinjaTemplate(tpl.jinja_source, variables=tpl.variables)) is first
    name = derived_name("Qwen-Qwen3-0.6B.jinja")
    assert name.startswith("derived:") and TOOL_PARSERS[name].name == name
    with pytest.raises(ParseError) as err:
        StreamParser("qwen3", parser="no-such-parser")
    assert "derived:" not in str(err.value)
    # options are part of the key: thinking off derives again (and finds the same format)
    assert derive_parser(tpl, enable_thinking=False).encoding == first.encoding


def _calls_read(fmt: DerivedFormat) -> DerivedFormat:
    """The derived format without its label (the label names whichever object derived first)."""
    return dataclasses.replace(fmt, template="")


@pytest.mark.parametrize("name", ["functionary-v3.1", "gigachat3"])
def test_derivation_does_not_depend_on_what_ran_before(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template derives the same parser in a fresh process and after other work: deriving a
    plain Jinja copy of its source (same variables, other stop words), deriving other
    templates and rendering other conversations through it first change nothing."""
    from chatfmt.parsing import derived

    packaged = chatfmt.get_template(name)
    monkeypatch.setattr(derived, "_CACHE", {})
    fresh = _calls_read(derive_parser(packaged))

    monkeypatch.setattr(derived, "_CACHE", {})
    plain = JinjaTemplate(packaged.jinja_source, variables=packaged.variables)
    with contextlib.suppress(ParseError):  # without the template's stop words it may not derive
        derive_parser(plain)
    derive_parser(official("Qwen-Qwen3-0.6B.jinja"))
    again = chatfmt.get_template(name)
    for conversation in (HISTORY, [*HISTORY, {"role": "user", "content": "more"}]):
        with contextlib.suppress(chatfmt.ChatFmtError):
            again.render(conversation, add_generation_prompt=True, tools=TOOLS)
    assert _calls_read(derive_parser(again)) == fresh


def test_recognized_and_packaged_templates_keep_their_parsers() -> None:
    recognized = chatfmt.get_template(TEMPLATES / "Qwen-Qwen3-0.6B.jinja")
    assert StreamParser(recognized)._parser.inner.name == "hermes"  # type: ignore[attr-defined]


def test_parse_a_jinja_path_and_the_cli(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from chatfmt.cli import app

    src = (TEMPLATES / "MiniMax-M1.jinja").read_text(encoding="utf-8")
    path = tmp_path / "unknown.jinja"
    path.write_text(src, encoding="utf-8")
    text = '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_calls>'
    msg = chatfmt.parse(text, str(path))
    assert msg["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo"}'
    out = tmp_path / "out.txt"
    out.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["parse", "--template", str(path), str(out)])
    assert result.exit_code == 0, result.output
    assert (
        json.loads(result.stdout)["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    )


_ODD_OUTPUTS = [
    '<<call>>get_weather##{"city": "Oslo"}',  # no end marker
    '<<call>>get_weather##{"city": "Os',  # truncated arguments
    "<<call>>get_wea",  # truncated name
    "<<call>>get_weather<</call>>after",  # no arguments
    "<<call>>get_weather## not json <</call>> then text",
    "<<call>" + "x" * 600,  # a cut marker, then no name separator at all
    "<<call>>" + "y" * 600 + '##{"a": 1}<</call>>',  # a name longer than any name
    'a <<call>>get_weather##{"city": "A"}<</call>>\n\n<<call>>get_weather##{}<</call>> b',
    "<<call",  # a cut start marker is text
]


@pytest.mark.parametrize("text", _ODD_OUTPUTS)
def test_named_arguments_machine_is_robust(text: str) -> None:
    """Broken, truncated and odd outputs: stream ≡ whole, and no text is lost."""
    tpl = _made_up("<<call>>{{ c.function.name }}##{{ c.function.arguments | tojson }}<</call>>")
    msg = assert_stream_equals_whole(text, tpl, tools=TOOLS)
    kept = (msg["content"] or "") + "".join(
        c["function"]["name"] + c["function"]["arguments"] for c in msg.get("tool_calls") or ()
    )
    for piece in re.split(r"<<call>>|##|<</call>>|\s+", text):
        assert piece in kept, piece
    for call in msg.get("tool_calls") or ():
        if "error" not in call:
            assert isinstance(json.loads(call["function"]["arguments"]), dict)


def test_cli_detect_shows_the_derived_parser(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chatfmt.cli import app

    def unregistered(name: str) -> str:
        """A copy of a reference file that matches no shipped template (a comment added)."""
        copy = tmp_path / name
        copy.write_text((TEMPLATES / name).read_text(encoding="utf-8") + "{# a copy #}")
        return str(copy)

    runner = CliRunner()
    result = runner.invoke(app, ["detect", unregistered("Spark2.5.jinja"), "--parser"])
    assert result.exit_code == 0, result.output
    assert "xml_pairs" in result.stdout and "<arg_key>" in result.stdout
    native = runner.invoke(app, ["detect", str(TEMPLATES / "Qwen-Qwen3-0.6B.jinja"), "--parser"])
    assert "parser: hermes (reasoning: qwen3)" in native.stdout
    shipped = runner.invoke(app, ["detect", str(TEMPLATES / "MiniMax-M2.jinja"), "--parser"])
    assert "parser: minimax_m2" in shipped.stdout  # the shipped file keeps its own parser
    failing = runner.invoke(app, ["detect", unregistered("MiniMax-M2.jinja"), "--parser"])
    assert failing.exit_code != 0 and "cannot derive a tool-call parser" in failing.output


def test_recognized_template_without_a_tool_parser_gets_a_derived_one() -> None:
    """A source recognized as ChatML (whose native template has no tool parser) that renders
    calls its own way: the parser is derived from the source."""
    from chatfmt.jinja.loaders import load_source

    src = (
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content or '' }}"
        "{%- for c in m.tool_calls or [] %}<<call>>{{ c.function.name }}##"
        "{{ c.function.arguments | tojson }}<</call>>{% endfor %}<|im_end|>\n{% endfor %}"
        "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    tpl = load_source(src)
    assert tpl is not None and tpl.tool_parser is None and tpl.name == "chatml"
    msg = parse('Hi <<call>>get_weather##{"city": "Oslo"}<</call>><|im_end|>', tpl, tools=TOOLS)
    assert msg["content"] == "Hi "
    assert msg["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo"}'


def test_a_failed_self_check_leaves_nothing_registered() -> None:
    """GigaChat3 writes its call after the end-of-turn marker: the derived parser cannot read
    its own rendering, so derivation fails and its parser names are withdrawn."""
    before = set(TOOL_PARSERS)
    tpl = JinjaTemplate(official("GigaChat3-10B-A1.8B.jinja").jinja_source, origin="again.jinja")
    with pytest.raises(ParseError, match="does not read the template's own calls back"):
        derive_parser(tpl)
    with pytest.raises(ParseError, match="does not read"):
        StreamParser(tpl)  # the failure is cached, not retried into a half-registered state
    assert set(TOOL_PARSERS) == before


def _xml_peer_cases() -> list[tuple[str, str, dict[str, Any], Any]]:
    """The XML-parameter formats' peer cases (vLLM, llama.cpp and the Seed-OSS cases, as
    tests/_xml_call_cases.py writes them): (official template, output, options, tools)."""
    if not _machine_available("xml_function"):
        return []
    import _xml_call_cases as xml

    out: list[tuple[str, str, dict[str, Any], Any]] = []
    out += [("Qwen3-Coder.jinja", text, {}, xml.VLLM_TOOLS) for text, _calls, _c in xml.VLLM_CASES]
    for filename in ("Qwen3.5-4B.jinja", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja"):
        out += [(filename, c[0], c[1], xml.LCPP_TOOLS) for c in xml.LCPP_CASES]
    seed = (xml.SEED_BUDGET0, xml.SEED_BUDGET512, xml.SEED_QUOTED)
    out += [("ByteDance-Seed-OSS.jinja", t + "<seed:eos>", {}, xml.SEED_TOOLS) for t in seed]
    return out


XML_PEER = _xml_peer_cases()


@pytest.mark.parametrize(("filename", "text", "options", "tools"), XML_PEER)
def test_cross_check_xml_parameter_peer_cases(
    filename: str, text: str, options: dict[str, Any], tools: Any
) -> None:
    """The derived <function=…><parameter=…> parser (from the plain official Jinja) against the
    native one (the packaged template), with each template's reasoning and prefill."""
    native = chatfmt.get_template(TEMPLATES / filename)
    assert native.tool_parser in ("qwen3_coder", "seed_oss")
    want = parse(text, native, tools=tools, id_factory=ids, **options)
    got = assert_stream_equals_whole(text, official(filename), tools=tools, **options)
    assert got == want


def _lfm_peer_cases() -> list[tuple[str, str]]:
    """vLLM's LFM2 cases (as tests/_pythonic_cases.py writes them): (case id, output)."""
    if not _machine_available("pythonic"):
        return []
    import _pythonic_cases as py

    return [(case[0], case[2]) for case in py.PEER_CASES if case[1] == "lfm2"]


LFM_PEER = _lfm_peer_cases()


@pytest.mark.parametrize(("case_id", "text"), LFM_PEER, ids=[c for c, _ in LFM_PEER])
def test_cross_check_pythonic_peer_cases(case_id: str, text: str) -> None:
    """The derived pythonic parser (from the plain LFM2.5 Jinja) against the native ``lfm2``."""
    filename = "LFM2.5-8B-A1B.jinja"
    native = chatfmt.get_template(TEMPLATES / filename)
    assert native.tool_parser == "lfm2"
    want = parse(text, native, id_factory=ids)
    got = assert_stream_equals_whole(text, official(filename))
    assert got == want, case_id
