"""Constraints for the formats with special structure (Harmony, DSML, Kimi K3, MiniMax-M3,
Gemma 4, Command R) and the grammar's limits: property order, pretty-printed JSON, the number
of parallel calls, and where a lazy grammar starts on reasoning templates.

Every template with a tool parser is checked on its own rendered call in
``test_constraints.py``; these tests check what the models write besides.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import chatfmt
from chatfmt.constraints import compile_constraint, gbnf_accepts
from chatfmt.constraints.compile import MAX_CALLS

pytest.importorskip("llama_cpp")
pytest.importorskip("llguidance")


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    params = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "parameters": params}}


WEATHER = _tool(
    "get_weather",
    {
        "city": {"type": "string", "description": "City."},
        "days": {"type": "integer", "description": "Days."},
        "metric": {"type": "boolean", "description": "Metric units."},
    },
    ["city", "days"],
)
TIME = _tool("get_time", {"tz": {"type": "string", "description": "Zone."}}, ["tz"])
TOOLS = [WEATHER, TIME]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def _grammar(name: str, choice: Any = "auto", **kwargs: Any) -> Any:
    constraint = compile_constraint(
        chatfmt.get_template(name), tools=TOOLS, tool_choice=choice, **kwargs
    )
    assert constraint is not None and constraint.gbnf
    return constraint


# ---------------------------------------------------------------------- Harmony
HARMONY_ARGS = '{"city": "Oslo", "days": 2}'


@pytest.mark.parametrize(
    "header",
    [
        "<|channel|>commentary json<|message|>",  # the template's form
        " <|constrain|>json<|message|>",  # after <|channel|>commentary, as the model writes it
        "<|channel|>commentary <|constrain|>json<|message|>",
    ],
)
def test_harmony_reads_the_header_forms_gpt_oss_writes(header: str) -> None:
    auto = _grammar("gpt-oss")
    assert auto.trigger == " to=functions."
    text = " to=functions.get_weather" + header + HARMONY_ARGS
    assert gbnf_accepts(auto.gbnf, text)
    assert not gbnf_accepts(auto.gbnf, text.replace("get_weather", "get_forecast"))
    # one call per message: <|call|> ends the turn, so the grammar ends after the arguments
    assert not gbnf_accepts(auto.gbnf, text + " to=functions.get_time" + header + '{"tz": "UTC"}')
    required = _grammar("gpt-oss", "required")
    assert required.prefill == " to=functions."
    assert gbnf_accepts(required.gbnf, text[len(required.prefill) :])
    # the model writes the analysis channel first and the call header after it
    ebnf = auto.ebnf
    assert ebnf is not None and gbnf_accepts(
        ebnf,
        "<|channel|>analysis<|message|>Oslo.<|end|><|start|>assistant<|channel|>commentary" + text,
    )


# ---------------------------------------------------------------------- typed attributes
def test_dsml_types_each_parameter_by_its_schema() -> None:
    named = _grammar("deepseek-v4", NAMED)
    assert named.prefill.endswith('<｜DSML｜invoke name="get_weather">\n')
    good = (
        '<｜DSML｜parameter name="days" string="false">2</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="city" string="true">Oslo</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
    )
    assert gbnf_accepts(named.gbnf, good)  # in any order
    assert not gbnf_accepts(named.gbnf, good.replace('string="false"', 'string="true"'))


def test_kimi_k3_writes_the_response_wrapper_before_the_calls() -> None:
    call = (
        '<|open|>tools<|sep|><|open|>call tool="get_time" index="1"<|sep|>'
        '<|open|>argument key="tz" type="string"<|sep|>UTC<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>"
    )
    thinking = _grammar("kimi-k3", "required")
    assert thinking.prefill == ""
    reply = "Time.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>" + call
    assert gbnf_accepts(thinking.gbnf, reply)
    assert not gbnf_accepts(thinking.gbnf, reply.replace('type="string"', 'type="number"'))
    off = _grammar("kimi-k3", "required", options={"thinking": False})
    assert gbnf_accepts(off.gbnf, "<|close|>response<|sep|>" + call)


def test_minimax_m3_closes_each_value_with_its_key() -> None:
    named = _grammar("minimax-m3", NAMED)
    m3 = "]<]minimax[>["
    call = (
        f'</mm:think>{m3}<tool_call>\n{m3}<invoke name="get_weather">'
        f"{m3}<city>Oslo{m3}</city>{m3}<days>2{m3}</days>{m3}</invoke>\n{m3}</tool_call>"
    )
    assert gbnf_accepts(named.gbnf, call)
    assert not gbnf_accepts(named.gbnf, call.replace(f"{m3}</days>", f"{m3}</city>"))


def test_gemma4_strings_are_delimited_and_other_values_bare() -> None:
    required = _grammar("gemma4", "required")
    call = '<|tool_call>call:get_weather{days:2,city:<|"|>Oslo<|"|>}<tool_call|>'
    assert gbnf_accepts(required.gbnf, call)
    assert not gbnf_accepts(required.gbnf, call.replace("days:2", 'days:<|"|>2<|"|>'))


# ---------------------------------------------------------------------- grammar limits
@pytest.mark.parametrize(
    ("name", "call", "again"),
    [
        (
            "qwen3-coder",
            "<tool_call>\n<function=get_weather>\n<parameter=metric>\ntrue\n</parameter>\n"
            "<parameter=days>\n2\n</parameter>\n<parameter=city>\nOslo\n</parameter>\n"
            "</function>\n</tool_call>",
            "<parameter=days>\n3\n</parameter>\n",
        ),
        (
            "glm4.5",
            "<tool_call>get_weather\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n"
            "<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call>",
            "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n",
        ),
    ],
)
def test_xml_parameters_may_come_in_any_order_once_each(name: str, call: str, again: str) -> None:
    required = _grammar(name, "required")
    assert call.startswith(required.prefill)
    text = call[len(required.prefill) :]
    assert gbnf_accepts(required.gbnf, text)
    closing = text.index("</function>" if "</function>" in text else "</tool_call>")
    assert not gbnf_accepts(required.gbnf, text[:closing] + again + text[closing:])  # twice
    without_days = text.replace(again.replace("3", "2"), "")
    assert without_days != text and not gbnf_accepts(required.gbnf, without_days)  # required


def test_pythonic_keywords_may_come_in_any_order() -> None:
    required = _grammar("lfm2.5-moe", "required", options={"enable_thinking": False})
    call = "<|tool_call_start|>[get_weather(days=2, city='Oslo')]<|tool_call_end|>"
    text = call[len(required.prefill) :]
    assert gbnf_accepts(required.gbnf, text)
    assert not gbnf_accepts(required.gbnf, text.replace("city='Oslo'", "days=3"))  # twice
    assert not gbnf_accepts(required.gbnf, text.replace(", city='Oslo'", ""))  # city required


def test_json_is_indented_where_the_template_indents_it() -> None:
    """Command R writes its calls indented by 4, arguments included: so may the model. Where
    the template writes compact JSON, the grammar leaves no room to pad it with blank lines
    (a small model does, until ``max_tokens``)."""
    named = _grammar("hermes3", NAMED)
    args = json.dumps({"city": "Oslo", "days": 2}, indent=4)
    assert gbnf_accepts(named.gbnf, json.dumps({"city": "Oslo", "days": 2}) + "}\n</tool_call>")
    assert not gbnf_accepts(named.gbnf, args + "}\n</tool_call>")
    command_r = _grammar("command-r", "required")
    call = json.dumps(
        [{"tool_name": "get_weather", "parameters": {"city": "Oslo", "days": 2}}], indent=4
    )
    assert gbnf_accepts(command_r.gbnf, "Action:\n```json\n" + call + "```")


def test_parallel_calls_end_after_the_last_one_allowed() -> None:
    required = _grammar("hermes3", "required")
    one = '{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>'
    calls = 'get_time", "arguments": {"tz": "UTC"}}\n</tool_call>'
    for _ in range(MAX_CALLS - 1):
        calls += "\n<tool_call>\n" + one
    assert gbnf_accepts(required.gbnf, calls)
    assert not gbnf_accepts(required.gbnf, calls + "\n<tool_call>\n" + one)


def test_a_lazy_trigger_never_fires_inside_reasoning() -> None:
    call = '<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>'
    # the prompt opened the block (R1 distill): lazy from the block's end
    opened = _grammar("qwq", options={"enable_thinking": True})
    assert opened.trigger == "</think>"
    assert gbnf_accepts(opened.gbnf, "</think>\n\n" + call)
    assert not gbnf_accepts(opened.gbnf, "</think>\n\n" + call.replace("get_time", "get_date"))
    # the model may open it itself (Qwen3): the grammar reads the block, from the first token
    optional = _grammar("qwen3")
    assert optional.trigger is None
    thought = "<think>\nI could write <tool_call> now, or answer.\n</think>\n\n"
    assert gbnf_accepts(optional.gbnf, thought + "It is sunny.")
    assert gbnf_accepts(optional.gbnf, thought + call)
    assert not gbnf_accepts(optional.gbnf, thought + call.replace("get_time", "get_date"))


@pytest.mark.parametrize(
    ("name", "options", "reply"),
    [
        (
            "qwq",
            {"enable_thinking": True},
            'Oslo.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": '
            '{"city": "Oslo", "days": 2}}\n</tool_call>',
        ),
        (
            "deepseek-r1-distill-llama",
            {},
            "Oslo.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
            'get_weather\n```json\n{"city": "Oslo", "days": 2}\n```<｜tool▁call▁end｜>'
            "<｜tool▁calls▁end｜>",
        ),
        (
            "command-r",
            {},
            'Action:\n```json\n[{"tool_name": "get_weather", "parameters": {"city": "Oslo", '
            '"days": 2}}]```',
        ),
    ],
)
def test_forced_choices_work_where_a_prefill_cannot(
    name: str, options: dict[str, Any], reply: str
) -> None:
    """Reasoning templates and templates whose prompt the rendered call does not continue:
    no prefill, the whole call (after the reasoning block) is in the grammar."""
    for choice in ("required", NAMED):
        constraint = _grammar(name, choice, options=options)
        assert constraint.prefill == ""
        assert gbnf_accepts(constraint.gbnf, reply), (name, choice)
        assert not gbnf_accepts(constraint.gbnf, reply.replace("get_weather", "get_time"))
    parsed = chatfmt.parse(reply, chatfmt.get_template(name), tools=TOOLS, **options)
    assert [c["function"]["name"] for c in parsed["tool_calls"]] == ["get_weather"]


# ---------------------------------------------------------------------- named tool parsers
@pytest.mark.parametrize(
    ("base", "parser", "call"),
    [
        # vLLM tests/tool_parsers/test_pythonic_tool_parser.py writes calls as a bare list
        (
            "meta-llama/Llama-3.2-3B-Instruct",
            "pythonic",
            "[get_weather(city='Oslo', days=2, metric=True)]",
        ),
        # what vLLM's phi4_mini_json parser reads (phi4mini_tool_parser.py): functools[{…}]
        (
            "qwen2.5",
            "phi4_mini_json",
            'functools[{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}]',
        ),
        # vLLM tests/tool_parsers/test_ernie45_moe_tool_parser.py: one <tool_call> block a call
        (
            "qwen2.5",
            "ernie45",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}\n'
            "</tool_call>",
        ),
    ],
)
def test_a_template_paired_with_a_named_parser_gets_its_grammar(
    base: str, parser: str, call: str
) -> None:
    """``with_tool_parser`` (vLLM's ``--tool-call-parser``): required and named choices are
    constrained to the parser's format (its declared ToolCallFormat), the call the parser
    reads is accepted, a wrong type or an unknown tool is not."""
    tpl = chatfmt.with_tool_parser(base, parser)
    for choice in ("required", NAMED):
        constraint = compile_constraint(tpl, tools=TOOLS, tool_choice=choice)
        assert constraint is not None and constraint.gbnf, (parser, choice)
        text = call[len(constraint.prefill) :] if constraint.prefill else call
        assert call.startswith(constraint.prefill or "")
        assert gbnf_accepts(constraint.gbnf, text), (parser, choice, constraint.prefill)
        assert not gbnf_accepts(constraint.gbnf, text.replace("2", "[2]", 1))
        if choice == "required":
            assert not gbnf_accepts(constraint.gbnf, text.replace("get_weather", "get_forecast"))
    # what the grammar lets through, the parser reads back as the call
    parsed = chatfmt.parse(call, tpl, tools=TOOLS)
    assert [c.name for c in parsed.tool_calls] == ["get_weather"]
