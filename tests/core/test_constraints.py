"""The constraint compiler and reply validation (chatfmt.constraints).

Acceptance is checked with llguidance over a byte-level tokenizer (``gbnf_accepts``): the
template's own rendering of a call must be a sentence of the grammar, a call of a tool that
was not offered or a wrongly typed argument must not.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import chatfmt
from chatfmt.constraints import (
    check_reply,
    compile_constraint,
    gbnf_accepts,
    legacy_structural_tag,
    tool_call_format,
)
from chatfmt.constraints.format_of import reasoning_state

pytest.importorskip("llama_cpp")
pytest.importorskip("llguidance")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "days": {"type": "integer", "description": "Days ahead."},
                "metric": {"type": "boolean", "description": "Metric units."},
            },
            "required": ["city", "days"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Time in a zone.",
        "parameters": {
            "type": "object",
            "properties": {"tz": {"type": "string", "description": "Time zone."}},
            "required": ["tz"],
        },
    },
}
TOOLS = [WEATHER, TIME]
ARGS = {"city": "Paris", "days": 3, "metric": True}
CALL = {
    "id": "a1b2c3d4e",
    "type": "function",
    "function": {"name": "get_weather", "arguments": json.dumps(ARGS)},
}
USER = [{"role": "user", "content": "Weather in Paris?"}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
NAMED_TIME = {"type": "function", "function": {"name": "get_time"}}


def _tool_templates() -> list[str]:
    """Names of the templates with a tool parser (their formats are found in the test, not at
    collection)."""
    seen: dict[int, str] = {}
    for tpl in chatfmt.REGISTRY:
        if tpl.tool_parser_class is not None:
            seen.setdefault(id(tpl), tpl.name)
    return list(seen.values())


#: Templates with a tool parser that render no assistant tool calls, and why: their grammars
#: are checked on a call written as the model writes it.
NOT_RENDERED = {
    "lfm2": "the template leaves assistant tool calls to the content",
    "lfm2.5": "the template leaves assistant tool calls to the content",
}
LFM_CALL = "<|tool_call_start|>[get_weather(city='Paris', days=3, metric=True)]<|tool_call_end|>"
WRITTEN = {"lfm2": LFM_CALL, "lfm2.5": LFM_CALL}
#: Templates without a grammar for ``auto``, and why (``required`` and named still have one).
NO_AUTO = {
    "chatglm3": "a call starts with its bare name: nothing marks a call in free text",
    "glm4": "a call starts with its bare name: nothing marks a call in free text",
    "functionary-v3.2": "a call starts with its bare name after the prompt's >>>",
}


def _model_part(tpl: Any, prompt: str, text: str) -> str:
    """``text`` (the rendered turn after the shared head) as the model writes it after
    ``prompt``: without what the prompt already ends with (DeepSeek V3.2's ``</think>``)."""
    for k in range(min(len(prompt), len(text)), 0, -1):
        if prompt.endswith(text[:k]) and not text[:k].isspace():
            return text[k:]
    return text


def _own_call(tpl: Any, calls: list[dict[str, Any]] | None = None) -> str | None:
    """The template's rendering of one call of get_weather (or ``calls``), up to the end of
    the calls block, as the model writes it after the generation prompt."""
    from chatfmt.parsing.derived_probe import _shared_head

    prompt = tpl.render(USER, tools=TOOLS)
    turn = {"role": "assistant", "content": "", "tool_calls": calls or [CALL]}
    try:
        full = tpl.render([*USER, turn], tools=TOOLS, add_generation_prompt=False)
    except chatfmt.ChatFmtError:
        return None  # the template renders no calls back (SmolLM3)
    text = _model_part(tpl, prompt, full[_shared_head(prompt, full) :])
    if "get_weather" not in text:
        return None
    fmt = tool_call_format(tpl)
    assert fmt is not None
    last = text.rfind("metric")  # the last argument written; the call's end markers follow
    ends = [text.find(m, last) + len(m) for m in (fmt.calls_end, fmt.call_end) if m]
    if any(e >= len(m) for e, m in zip(ends, [m for m in (fmt.calls_end, fmt.call_end) if m])):
        text = text[: max(ends)]
    else:
        close = "]" if fmt.encoding in ("json_list", "pythonic", "json_keyed") else "}"
        text = text[: text.rfind(close) + 1]
    if fmt.calls_end and not text.endswith(fmt.calls_end):
        text += fmt.calls_end  # DeepSeek V3 leaves the block open after one call; models close it
    return text


def _wrong_type(text: str) -> str:
    """``text`` with the integer ``days`` written as a list."""
    at = text.find("3", text.find("days"))
    return text[:at] + "[3]" + text[at + 1 :]


def _continuation(tpl: Any, choice: Any, call: str) -> tuple[Any, str]:
    constraint = compile_constraint(tpl, tools=TOOLS, tool_choice=choice)
    assert constraint is not None and constraint.gbnf
    text = call
    thinking = reasoning_state(tpl, {}, tool_call_format(tpl))
    if thinking is not None and thinking[2] and thinking[1] not in text:
        # the model closes the open reasoning block first
        text = "Let me look that up." + thinking[1] + "\n" + text
    if thinking is not None and constraint.trigger == thinking[1]:
        # lazy from the reasoning block's end; the free text before the call is left out
        # (llguidance, unlike llama.cpp, does not read a free text holding a prefix of the
        # call's marker, such as Kimi K3's empty ``response`` wrapper)
        fmt = tool_call_format(tpl)
        assert fmt is not None
        opening = next(m for m in (fmt.calls_begin, fmt.call_begin) if m.strip())
        text = thinking[1] + "\n" + text[text.index(opening) :]
    elif constraint.trigger is not None:
        text = text[text.index(constraint.trigger) :]
    elif constraint.prefill:
        assert text.startswith(constraint.prefill), (constraint.prefill, text)
        text = text[len(constraint.prefill) :]
    return constraint, text


def _template(name: str) -> Any:
    """A registered template, or ``base+format`` paired with a named tool format."""
    base, _, paired = name.partition("+")
    tpl = chatfmt.get_template(base)
    return chatfmt.with_tool_format(tpl, paired) if paired else tpl


@pytest.mark.parametrize("name", [*_tool_templates(), "smollm2+hermes"])
def test_the_template_own_call_is_accepted_and_bad_calls_are_not(name: str) -> None:
    """Every template with a tool parser gets a grammar for auto, required and named choices
    of two tools; its own rendering of a call is accepted, a call of a tool not offered and a
    wrongly typed argument are not. The exceptions above say why."""
    tpl = _template(name)
    if not tpl.supports_tools:  # SmolLM3 drops calls and has no format: pair it with one
        with pytest.raises(chatfmt.ChatFmtError, match="with_tool_format"):
            compile_constraint(tpl, tools=TOOLS, tool_choice="required")
        return
    assert tool_call_format(tpl) is not None, name
    call = WRITTEN[name] if name in NOT_RENDERED else _own_call(tpl)
    assert call is not None, name
    choices: list[Any] = [NAMED]
    if name not in NO_AUTO:
        choices.append("auto")
    else:
        assert compile_constraint(tpl, tools=TOOLS) is None
    choices.append("required")
    for choice in choices:
        constraint, text = _continuation(tpl, choice, call)
        assert gbnf_accepts(constraint.gbnf, text), (tpl.name, choice, constraint.prefill, text)
        assert not gbnf_accepts(constraint.gbnf, _wrong_type(text)), (tpl.name, choice)
        if choice != NAMED:
            unknown = text.replace("get_weather", "get_forecast")
            assert not gbnf_accepts(constraint.gbnf, unknown), (tpl.name, choice)
    # a named choice of another tool does not accept get_weather's arguments
    other = compile_constraint(tpl, tools=TOOLS, tool_choice=NAMED_TIME)
    named, text = _continuation(tpl, NAMED, call)
    assert other is not None
    if named.prefill or not other.prefill:  # get_time's grammar where it reads this text
        assert not gbnf_accepts(other.gbnf, text)


@pytest.mark.parametrize("name", ["hermes3", "qwen2.5", "llama3.1", "kimi-k2"])
def test_json_formats_have_a_structural_tag_and_a_non_lazy_ebnf(name: str) -> None:
    tpl = chatfmt.get_template(name)
    constraint = compile_constraint(tpl, tools=TOOLS, parallel_tool_calls=False)
    assert constraint is not None and constraint.trigger
    tag = constraint.structural_tag
    assert tag is not None and tag["format"]["stop_after_first"] is True
    tags = tag["format"]["tags"]
    assert [t["content"]["json_schema"] for t in tags] == [
        WEATHER["function"]["parameters"],
        TIME["function"]["parameters"],
    ]
    assert all(t["begin"].startswith(constraint.trigger) for t in tags)
    legacy = legacy_structural_tag(tag)
    assert legacy is not None and legacy["triggers"] == [constraint.trigger]
    # the ebnf reads free text, then the call, from the first token
    call = _own_call(tpl)
    assert call is not None
    assert constraint.ebnf is not None
    assert gbnf_accepts(constraint.ebnf, "Let me check. " + call[call.index(constraint.trigger) :])


def test_named_choice_prefills_through_the_name_closing_delimiter() -> None:
    hermes = chatfmt.get_template("hermes3")
    constraint = compile_constraint(hermes, tools=TOOLS, tool_choice=NAMED)
    assert constraint is not None
    assert constraint.prefill == '<tool_call>\n{"name": "get_weather", "arguments": '
    assert gbnf_accepts(constraint.gbnf, '{"city": "Oslo", "days": 2}}\n</tool_call>')
    assert not gbnf_accepts(constraint.gbnf, '{"city": "Oslo"}}\n</tool_call>')  # days required


def test_required_allows_more_calls_only_when_parallel() -> None:
    hermes = chatfmt.get_template("hermes3")
    one = '{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>'
    two = 'get_time", "arguments": {"tz": "UTC"}}\n</tool_call>\n<tool_call>\n' + one
    parallel = compile_constraint(hermes, tools=TOOLS, tool_choice="required")
    single = compile_constraint(
        hermes, tools=TOOLS, tool_choice="required", parallel_tool_calls=False
    )
    assert parallel is not None and single is not None
    assert parallel.prefill == single.prefill == '<tool_call>\n{"name": "'
    assert gbnf_accepts(parallel.gbnf, two)
    assert not gbnf_accepts(single.gbnf, two)
    assert gbnf_accepts(single.gbnf, one.split('"', 3)[3])


def test_response_format_json_schema_and_json_object() -> None:
    hermes = chatfmt.get_template("hermes3")
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema, "strict": True}}
    constraint = compile_constraint(hermes, response_format=fmt)
    assert constraint is not None and constraint.json_schema == schema and not constraint.prefill
    assert gbnf_accepts(constraint.gbnf, '{"answer": 42}')
    assert not gbnf_accepts(constraint.gbnf, '{"answer": "42"}')
    assert not gbnf_accepts(constraint.gbnf, "The answer is 42.")
    anything = compile_constraint(hermes, response_format={"type": "json_object"})
    assert anything is not None and anything.json_schema == {"type": "object"}
    assert gbnf_accepts(anything.gbnf, '{"x": [1, 2]}')
    assert not gbnf_accepts(anything.gbnf, "[1, 2]")
    assert compile_constraint(hermes, response_format={"type": "text"}) is None
    assert compile_constraint(hermes, tools=TOOLS, tool_choice="none") is None


@pytest.mark.parametrize("limit", [3, 40, 500])
def test_long_length_limits_compile_and_hold(limit: int) -> None:
    """The converter nests "up to n more" n deep; long limits must still compile (flat) and
    bound the value exactly."""
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "minLength": 2, "maxLength": limit}},
        "required": ["s"],
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    constraint = compile_constraint(chatfmt.get_template("hermes3"), response_format=fmt)
    assert constraint is not None
    assert gbnf_accepts(constraint.gbnf, json.dumps({"s": "x" * limit}))
    assert gbnf_accepts(constraint.gbnf, json.dumps({"s": "xy"}))
    assert not gbnf_accepts(constraint.gbnf, json.dumps({"s": "x" * (limit + 1)}))
    assert not gbnf_accepts(constraint.gbnf, json.dumps({"s": "x"}))


def test_a_reasoning_template_gets_the_reasoning_block_in_the_grammar() -> None:
    qwen3 = chatfmt.get_template("qwen3")
    constraint = compile_constraint(qwen3, tools=TOOLS, tool_choice=NAMED)
    assert constraint is not None and constraint.prefill == ""  # nothing can follow a think block
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 1}}\n</tool_call>'
    assert gbnf_accepts(constraint.gbnf, "<think>\nOslo, one day.\n</think>\n\n" + call)
    assert gbnf_accepts(constraint.gbnf, call)
    off = compile_constraint(
        qwen3, tools=TOOLS, tool_choice=NAMED, options={"enable_thinking": False}
    )
    assert off is not None and off.prefill.endswith('"get_weather", "arguments": ')


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": {"type": "nope"}},
                }
            },
            "response_format.json_schema.schema",
        ),
        (
            {
                "tools": [
                    WEATHER,
                    {
                        "type": "function",
                        "function": {
                            "name": "b",
                            "parameters": {"type": "object", "required": "x"},
                        },
                    },
                ]
            },
            "tools[1].function.parameters",
        ),
        ({"response_format": {"type": "xml"}}, "response_format.type"),
        (
            {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
            "tool_choice",
        ),
    ],
)
def test_malformed_requests_raise_a_validation_error_naming_the_field(
    kwargs: Any, field: str
) -> None:
    with pytest.raises(chatfmt.ValidationError) as caught:
        compile_constraint(chatfmt.get_template("hermes3"), **kwargs)
    assert caught.value.field == field and str(caught.value).startswith(field)


def test_a_template_without_a_tool_format_says_how_to_choose_one() -> None:
    with pytest.raises(chatfmt.ChatFmtError, match="tool_format"):
        compile_constraint(chatfmt.get_template("chatml"), tools=TOOLS)


def test_a_repeated_request_is_served_from_the_cache() -> None:
    hermes = chatfmt.get_template("hermes3")
    first = compile_constraint(hermes, tools=TOOLS, tool_choice="required")
    # equal tools in new objects: the same compiled constraint (the benchmark reports the time)
    again = compile_constraint(hermes, tools=[dict(t) for t in TOOLS], tool_choice="required")
    assert again is first
    other = compile_constraint(
        hermes, tools=TOOLS, tool_choice="required", parallel_tool_calls=False
    )
    assert other is not first and other != first


# ---------------------------------------------------------------------- check_reply
def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}


def test_check_reply_accepts_a_valid_call_and_a_valid_answer() -> None:
    good = {"content": None, "tool_calls": [_call("get_weather", '{"city": "Rome", "days": 2}')]}
    assert check_reply(good, tools=TOOLS, tool_choice="required") == []
    assert check_reply(good, tools=TOOLS, tool_choice=NAMED) == []
    fmt = {"type": "json_object"}
    assert check_reply({"content": '{"a": 1}'}, response_format=fmt) == []


def test_check_reply_names_each_problem_and_where() -> None:
    reply = {
        "content": None,
        "tool_calls": [
            _call("get_weather_city", "{}"),
            _call("get_weather", '{"city": "Rome", "days": "two"}'),
            _call("get_time", "{not json"),
            _call("get_time", "[1]"),
        ],
    }
    problems = check_reply(reply, tools=TOOLS, tool_choice=NAMED)
    where = [p.where for p in problems]
    assert where == [
        "tool_calls[0].function.name",
        "tool_calls[1].function.arguments.days",
        "tool_calls[2].function.name",
        "tool_calls[2].function.arguments",
        "tool_calls[3].function.name",
        "tool_calls[3].function.arguments",
    ]
    assert "not an offered tool" in problems[0].what and "get_weather_city" in problems[0].what
    assert "'two' is not of type 'integer'" in problems[1].what
    assert "asks for 'get_weather'" in problems[2].what
    assert "not valid JSON" in problems[3].what and "not a JSON object" in problems[5].what


def test_check_reply_flags_text_where_a_call_or_json_was_required() -> None:
    text = {"content": "It is sunny."}
    (required,) = check_reply(text, tools=TOOLS, tool_choice="required")
    (named,) = check_reply(text, tools=TOOLS, tool_choice=NAMED)
    assert required.where == named.where == "tool_calls" and "text only" in named.what
    schema = {"type": "object", "required": ["answer"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    (prose,) = check_reply(text, response_format=fmt)
    (missing,) = check_reply({"content": '{"x": 1}'}, response_format=fmt)
    assert prose.where == "content" and "not valid JSON" in prose.what
    assert missing.where == "content" and "'answer' is a required property" in missing.what
    (called,) = check_reply(
        {"tool_calls": [_call("get_time", '{"tz": "UTC"}')]}, tools=TOOLS, tool_choice="none"
    )
    assert called.where == "tool_calls"


def test_check_reply_reports_a_call_the_parser_flagged() -> None:
    cut = _call("get_time", '{"tz": "UTC"}')
    cut["error"] = "truncated"
    (flagged,) = check_reply({"tool_calls": [cut]}, tools=TOOLS)
    assert flagged.where == "tool_calls[0]" and "could not be read: truncated" in flagged.what
    broken = _call("get_time", '{"tz": "UTC"')
    broken["error"] = "invalid arguments"
    (invalid,) = check_reply({"tool_calls": [broken]}, tools=TOOLS)  # one problem, not two
    assert invalid.where == "tool_calls[0].function.arguments" and "not valid JSON" in invalid.what


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "hermes3",
        "llama3.1",
        "kimi-k2",
        "qwen3-coder",
        "glm4.5",
        "gpt-oss",
        "deepseek-v4",
        "kimi-k3",
        "gemma4",
        "minimax-m3",
        "command-r",
        "qwen3",
    ],
)
def test_xgrammar_reads_the_ebnf_and_the_structural_tag(name: str) -> None:
    xgr = pytest.importorskip("xgrammar")  # vLLM's and SGLang's grammar engine (imports torch)
    from xgrammar.testing import _is_grammar_accept_string

    tpl = chatfmt.get_template(name)
    call = _own_call(tpl)
    assert call is not None
    for choice in ("auto", "required", NAMED):
        constraint, text = _continuation(tpl, choice, call)
        assert constraint.ebnf is not None
        grammar = xgr.Grammar.from_ebnf(constraint.ebnf)
        assert _is_grammar_accept_string(grammar, text), (name, choice)
    auto = compile_constraint(tpl, tools=TOOLS)
    assert auto is not None
    if auto.structural_tag is not None:
        tag = xgr.Grammar.from_structural_tag(json.dumps(auto.structural_tag))
        assert _is_grammar_accept_string(tag, "Checking. " + call[call.index(auto.trigger or "") :])


@pytest.mark.parametrize(
    ("name", "prefill", "rest"),
    [
        (
            "qwen3-coder",
            "<tool_call>\n<function=get_weather>\n",
            "<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n2\n</parameter>\n"
            "</function>\n</tool_call>",
        ),
        (
            "mistral-v7",
            "[TOOL_CALLS]get_weather[CALL_ID]",
            'a1b2c3d4e[ARGS]{"city": "Oslo", "days": 2}',
        ),
        (
            "kimi-k2",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
            "<|tool_call_argument_begin|>",
            '{"city": "Oslo", "days": 2}<|tool_call_end|><|tool_calls_section_end|>',
        ),
        (
            "lfm2.5-moe",
            "<|tool_call_start|>[get_weather(",
            "city='Oslo', days=2)]<|tool_call_end|>",
        ),
    ],
)
def test_named_prefills_close_the_name_in_every_encoding(
    name: str, prefill: str, rest: str
) -> None:
    """The prefill ends where the arguments begin (a call id is left to the model), and what
    the model writes next is held to the tool's schema."""
    from chatfmt.gateway.tool_choice import prefill_for

    tpl = chatfmt.get_template(name)
    assert prefill_for(tpl, {}, NAMED) == prefill
    constraint = compile_constraint(tpl, tools=TOOLS, tool_choice=NAMED)
    assert constraint is not None
    if reasoning_state(tpl, {}, tool_call_format(tpl)) is not None:
        # the model may think first (LFM2.5): no prefill, the whole call is in the grammar
        assert constraint.prefill == ""
        text = prefill + rest
    else:
        assert constraint.prefill == prefill
        text = rest
    assert gbnf_accepts(constraint.gbnf, text)
    wrong = re.sub(r"(days\W{1,4})2", r"\1[2]", text, count=1)  # an integer written as a list
    assert wrong != text and not gbnf_accepts(constraint.gbnf, wrong)
    parsed = chatfmt.parse(prefill + rest, tpl, tools=TOOLS)
    assert check_reply(parsed, tools=TOOLS, tool_choice=NAMED) == []


def test_text_up_to_a_marker_never_contains_the_marker() -> None:
    from chatfmt.constraints.gbnf import until_rules

    grammar = 'root ::= free "<tool_call>"\n' + "\n".join(until_rules("free", "<tool_call>"))
    assert gbnf_accepts(grammar, "Let me check <b>that</b>.<tool_call>")
    assert gbnf_accepts(grammar, "<tool_call>")
    assert not gbnf_accepts(grammar, "a<tool_call>b<tool_call>")
    assert not gbnf_accepts(grammar, "no marker at all")
