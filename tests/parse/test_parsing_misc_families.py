"""Parsers of smaller families: Apertus, Apriel 1.5/1.6, GigaChat 3/3.1, Ministral-3
reasoning (``[THINK]``), Solar Open, Hy3 (Hunyuan 3), MiniCPM5 and Cohere2MoE (North).

Every case is checked whole and streamed in every chunking (``_streaming.chunkings``); the
peer cases name the peer test they come from (inputs and expected results only). The round
trip from each official template is ``tests/parse/test_render_parse_loop.py`` (``-k <template>``).
"""

from __future__ import annotations

from typing import Any

import pytest

import chatfmt
from _streaming import assert_stream_equals_whole, call_ids, decoded_calls
from chatfmt.parsing import end_of_turn_markers, parse

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "options": {"type": "object"},
                "exact": {"type": "boolean"},
            },
        },
    },
}
TOOLS = [WEATHER, "special_function", "manage_user_memory", "weather", "read_file", "web_search"]


calls_of = decoded_calls


def check(
    text: str,
    template: str | None,
    *,
    content: str | None = None,
    reasoning: str | None = None,
    calls: list[tuple[str, Any, str | None]] | None = None,
    tools: list[Any] | None = TOOLS,
    **options: Any,
) -> dict[str, Any]:
    """Whole ≡ stream over every chunking, and the expected message."""
    msg = assert_stream_equals_whole(text, template, tools=tools, **options)
    assert msg["content"] == content, msg
    assert msg.get("reasoning_content") == reasoning, msg
    got = calls_of(msg)
    want = calls or []
    assert [(n, a) for n, a, _ in got] == [(n, a) for n, a, _ in want], msg
    for (_, _, error), (_, _, expected) in zip(got, want, strict=True):
        # an expected error is the start of the reason (details vary with the JSON scanner)
        assert (error is None) == (expected is None) and (error or "").startswith(expected or ""), (
            msg
        )
    return msg


# ------------------------------------------------------------------ peer cases (inputs/expected)
#: llama.cpp tests/test-chat.cpp (Apertus block: COMMON_CHAT_FORMAT_APERTUS, reasoning DEEPSEEK).
APERTUS_PEER = [
    (
        '<|tools_prefix|>[{"special_function": {"arg1": 1}}]<|tools_suffix|>',
        None,
        None,
        [("special_function", {"arg1": 1}, None)],
    ),
    (
        "<|inner_prefix|>I'm\nthinking<|inner_suffix|>"
        '<|tools_prefix|>[{"special_function": {"arg1": 1}}]<|tools_suffix|>',
        None,
        "I'm\nthinking",
        [("special_function", {"arg1": 1}, None)],
    ),
    (
        '<|tools_prefix|>[{"special_function": {"arg1": 1}}]<|tools_suffix|>'
        "Hello, world!\nWhat's up?",
        "Hello, world!\nWhat's up?",
        None,
        [("special_function", {"arg1": 1}, None)],
    ),
    (
        "<|inner_prefix|>I'm\nthinking<|inner_suffix|>"
        '<|tools_prefix|>[{"special_function": {"arg1": 1}}]<|tools_suffix|>'
        "Hello, world!\nWhat's up?",
        "Hello, world!\nWhat's up?",
        "I'm\nthinking",
        [("special_function", {"arg1": 1}, None)],
    ),
    # SGLang's apertus detector docstring form
    (
        '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>',
        None,
        None,
        [("get_weather", {"city": "Paris"}, None)],
    ),
]


@pytest.mark.parametrize(("text", "content", "reasoning", "calls"), APERTUS_PEER)
def test_apertus_peer_cases(
    text: str, content: str | None, reasoning: str | None, calls: Any
) -> None:
    check(text, "apertus", content=content, reasoning=reasoning, calls=calls)


#: SGLang test/.../test_gigachat3_detector.py (GigaChat3Detector): content before
#: ``<|message_sep|>``, one call after ``function call<|role_sep|>``, ``</s>`` ends generation.
GIGACHAT3_PEER = [
    ("How can I help you today?", "How can I help you today?", []),
    (
        '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "manage_user_memory", '
        '"arguments": {"action": "create", "id": "preferences"}}',
        None,
        [("manage_user_memory", {"action": "create", "id": "preferences"}, None)],
    ),
    (
        '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "manage_user_memory", '
        '"arguments": {}}',
        None,
        [("manage_user_memory", {}, None)],
    ),
    (
        "I'll remember that.<|message_sep|>\n\nfunction call<|role_sep|>\n"
        '{"name": "manage_user_memory", "arguments": {"action": "create", "id": "test"}}</s>',
        "I'll remember that.",
        [("manage_user_memory", {"action": "create", "id": "test"}, None)],
    ),
    (  # the peer drops the call; here it is kept, flagged, with its raw text
        '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "manage_user_memory", '
        '"arguments": {invalid json}}',
        None,
        [("manage_user_memory", "{invalid json}}", "invalid JSON")],
    ),
    (  # the peer drops it; here: a valid call with no arguments key means {}
        '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "manage_user_memory"}',
        None,
        [("manage_user_memory", {}, None)],
    ),
    (  # the peer drops it; here it is flagged
        '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "manage_user_memory", '
        '"arguments": "string_args"}',
        None,
        [("manage_user_memory", "string_args", "arguments are not a JSON object")],
    ),
]


@pytest.mark.parametrize(("text", "content", "calls"), GIGACHAT3_PEER)
def test_gigachat3_peer_cases(text: str, content: str | None, calls: Any) -> None:
    check(text, "gigachat3", content=content, calls=calls)


#: vLLM tests/reasoning/test_mistral_reasoning_parser.py (parser "mistral", Magistral tokenizer):
#: the cases where the block opens with [THINK] or there is none.
MISTRAL_THINK_PEER = [
    (
        "[THINK]This is a reasoning section[/THINK]This is the rest",
        "This is the rest",
        "This is a reasoning section",
    ),
    ("[THINK]This is a reasoning section[/THINK]", None, "This is a reasoning section"),
    ("[THINK]This\nThat[/THINK]This is the rest\nThat", "This is the rest\nThat", "This\nThat"),
    ("[THINK]This is a reasoning section", None, "This is a reasoning section"),
    ("[THINK]This is reasoning", None, "This is reasoning"),
    ("This is content", "This is content", None),
    ("", None, None),
]


@pytest.mark.parametrize(("text", "content", "reasoning"), MISTRAL_THINK_PEER)
def test_mistral_think_peer_cases(text: str, content: str | None, reasoning: str | None) -> None:
    check(text, "ministral3-reasoning", content=content, reasoning=reasoning)


def test_mistral_think_keeps_a_stray_closer_as_text() -> None:
    # vLLM drops a [/THINK] that no [THINK] opened ("This is a reasoning sectionThis is the
    # rest"); never dropping text, it stays content here.
    text = "This is a reasoning section[/THINK]This is the rest"
    check(text, "ministral3-reasoning", content=text)


def test_ministral3_reasoning_then_calls() -> None:
    text = '[THINK]Need weather.[/THINK]Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>'
    check(
        text,
        "mistralai/Ministral-3-14B-Reasoning-2512",
        content="Checking.",
        reasoning="Need weather.",
        calls=[("get_weather", {"city": "Paris"}, None)],
        id_factory=call_ids,
    )


#: mlx-openai-server tests (Solar Open reasoning / tool parsers).
SOLAR_PEER = [
    ("<|think|>Reason<|end|><|content|>Hello", "Hello", "Reason", []),
    ("<|begin|>assistant<|content|>Hi", "Hi", None, []),
    (
        "<|tool_calls|><|tool_call:begin|>id<|tool_call:name|>weather"
        '<|tool_call:args|>{"city": "Seoul"}<|tool_call:end|><|calls|>',
        None,
        None,
        [("weather", {"city": "Seoul"}, None)],
    ),
    (
        'Hi <|tool_calls|><|tool_call:begin|>id<|tool_call:name|>weather<|tool_call:args|>{"city":'
        '"Seoul"}<|tool_call:end|>',
        "Hi ",
        None,
        [("weather", {"city": "Seoul"}, None)],
    ),
]


@pytest.mark.parametrize(("text", "content", "reasoning", "calls"), SOLAR_PEER)
def test_solar_open_peer_cases(text: str, content: Any, reasoning: Any, calls: Any) -> None:
    check(text, "solar-open", content=content, reasoning=reasoning, calls=calls)


# ------------------------------------------------------------------ formats, from the templates
def test_apertus_several_calls_and_broken_objects() -> None:
    check(
        'Hi <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"get_weather": {}}]'
        "<|tools_suffix|><|assistant_end|>",
        "apertus",
        content="Hi ",
        calls=[("get_weather", {"city": "Paris"}, None), ("get_weather", {}, None)],
    )
    check(  # not a {"name": args} object: flagged with its raw text; text after is content
        "<|tools_prefix|>[{3: 4}]<|tools_suffix|> ok",
        "apertus",
        content=" ok",
        calls=[("", "{3: 4}]", "not a tool call")],
    )
    check(  # two members in one call object
        '<|tools_prefix|>[{"get_weather": {}, "x": 1}]<|tools_suffix|>',
        "apertus",
        calls=[("get_weather", '{}, "x": 1}]', "more than one member in a call object")],
    )
    check(
        '<|tools_prefix|>[{"get_weather": 5}]<|tools_suffix|>',
        "apertus",
        calls=[("get_weather", 5, "arguments are not a JSON object")],
    )


def test_apriel_15_and_16() -> None:
    # Apriel 1.5 writes the reasoning header itself and closes the answer.
    check(
        "Here are my reasoning steps:\n1. x\n[BEGIN FINAL RESPONSE]\nParis.\n"
        "[END FINAL RESPONSE]\n<|end|>",
        "apriel-1.5",
        content="Paris.",
        reasoning="1. x",
    )
    # the newline before <|end|> is the model's text (only markers and what is next to them go)
    check("Just an answer.\n<|end|>\n</s>", "apriel-1.5", content="Just an answer.\n")
    # Apriel 1.6's prompt opens the reasoning: the output starts inside it.
    check(
        "The user wants news.\n[BEGIN FINAL RESPONSE]\n"
        '<tool_calls>[{"name": "web_search", "arguments": {"query": "news"}}]</tool_calls>',
        "ServiceNow-AI/Apriel-1.6-15b-Thinker",
        reasoning="The user wants news.",
        calls=[("web_search", {"query": "news"}, None)],
    )
    check(  # an "id" member (the template writes one for earlier turns) is not an argument
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "c1"}]'
        "</tool_calls>",
        "apriel",
        calls=[("get_weather", {"city": "Rome"}, None)],
    )


def test_gigachat3_turn_goes_on_after_message_sep() -> None:
    # Text after <|message_sep|> that is no function call keeps the separator (no text dropped).
    check(
        "Hi<|message_sep|>\n\nuser<|role_sep|>\nmore",
        "gigachat3",
        content="Hi<|message_sep|>\n\nuser<|role_sep|>\nmore",
    )
    check("Hi<|message_sep|>\n\n</s>", "gigachat3", content="Hi")


@pytest.mark.parametrize("parser", ["gigachat3", "gigachat3.1"])
def test_gigachat_bare_parser_ends_the_turn_at_eos(parser: str) -> None:
    """vLLM tests/tool_parsers/test_gigachat3_tool_parser.py (``*_with_eos_*``): the family's
    ``</s>`` ends the turn with the bare parser too; what follows is trailing text."""
    head = "<|message_sep|>\n\nfunction call<|role_sep|>\n" if parser == "gigachat3" else ""
    head = head or "<|function_call|>"
    text = "Sure." + head + '{"name": "get_weather", "arguments": {"city": "Oslo"}}</s>more'
    msg = check(
        text,
        None,
        parser=parser,
        content="Sure.",
        calls=[("get_weather", {"city": "Oslo"}, None)],
    )
    assert msg.trailing_text == "more"


def test_gigachat31_call_and_end_of_turn() -> None:
    msg = check(
        'Sure.<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}'
        "<|message_sep|>\n\nuser<|role_sep|>\nnext",
        "ai-sage/GigaChat3.1-10B-A1.8B",
        content="Sure.",
        calls=[("get_weather", {"city": "Paris"}, None)],
    )
    assert msg == parse(
        'Sure.<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "gigachat3.1",
        tools=TOOLS,
        id_factory=call_ids,
    )
    assert (
        parse("Hi<|message_sep|>\n\nuser<|role_sep|>\nnext", "gigachat3.1").trailing_text
        == "user<|role_sep|>\nnext"  # the template's "\n\n" after the marker is not kept
    )


HY = "<tool_calls:opensource>\n<tool_call:opensource>{name}<tool_sep:opensource>\n{pairs}</tool_call:opensource>\n</tool_calls:opensource>"


def hy_pairs(**kwargs: str) -> str:
    return "".join(
        f"<arg_key:opensource>{k}</arg_key:opensource>\n<arg_value:opensource>{v}</arg_value:opensource>\n"
        for k, v in kwargs.items()
    )


def test_hy3_calls_typed_by_schema() -> None:
    text = "I will check.\n" + HY.format(name="get_weather", pairs=hy_pairs(city="Paris", days="2"))
    check(
        text,
        "hy3",
        content="I will check.\n",
        calls=[("get_weather", {"city": "Paris", "days": 2}, None)],
    )
    # without a schema the values stay strings
    check(
        text,
        "hy3",
        content="I will check.\n",
        calls=[("get_weather", {"city": "Paris", "days": "2"}, None)],
        tools=None,
    )
    check(  # object and boolean values (the template writes them as JSON)
        HY.format(name="get_weather", pairs=hy_pairs(options='{"unit": "C"}', exact="true")),
        "hy3",
        calls=[("get_weather", {"options": {"unit": "C"}, "exact": True}, None)],
    )


def test_hy3_reasoning_prefilled_by_effort() -> None:
    text = "Plan it.</think:opensource>Answer.<｜hy_eos:opensource｜>"
    check(
        text,
        "tencent/Hy3-preview",
        content="Answer.",
        reasoning="Plan it.",
        reasoning_effort="high",
    )
    # reasoning_effort no_think (default): the prompt closed the block, output is the answer
    check("Answer.<｜hy_eos:opensource｜>", "hy3", content="Answer.")


def test_hy3_broken_and_truncated() -> None:
    check(
        HY.format(name="get_weather", pairs="oops\n") + "after",
        "hy3",
        content="after",
        calls=[("get_weather", "oops\n", "malformed argument pairs")],
    )
    check(
        "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n"
        "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Par",
        "hy3",
        calls=[
            (
                "get_weather",
                "<arg_key:opensource>city</arg_key:opensource><arg_value:opensource>Par",
                "truncated",
            )
        ],
    )


def minicpm_call(name: str, **params: str) -> str:
    body = "".join(f'<param name="{k}">{v}</param>' for k, v in params.items())
    return f'<function name="{name}">{body}</function>'


def test_minicpm5_calls_cdata_and_types() -> None:
    text = (
        "Let me check.\n"
        + minicpm_call("get_weather", city="Paris", days="2", options="{'unit': 'C'}")
        + "\n"
        + minicpm_call("get_weather", city="<![CDATA[a <b>\n&c]]>", exact="True")
    )
    check(
        text,
        "openbmb/MiniCPM5-1B",
        content="Let me check.",  # the newline before a call is the template's, not content
        calls=[
            ("get_weather", {"city": "Paris", "days": 2, "options": {"unit": "C"}}, None),
            ("get_weather", {"city": "a <b>\n&c", "exact": True}, None),
        ],
    )


def test_minicpm5_reasoning_and_prefill() -> None:
    check(
        "<think>\nHmm.\n</think>\n\n" + minicpm_call("get_weather", city="Oslo"),
        "minicpm5",
        reasoning="Hmm.",
        calls=[("get_weather", {"city": "Oslo"}, None)],
    )
    check(
        "Hmm.\n</think>\n\nOslo.<|im_end|>",
        "minicpm5",
        content="Oslo.",
        reasoning="Hmm.",
        enable_thinking=True,
    )


def test_minicpm5_cut_and_broken() -> None:
    # cut inside a closing tag after a complete value: the call stands, the cut tag is text
    check(
        '<function name="get_weather"><param name="city">Paris</pa',
        "minicpm5",
        content="</pa",
        calls=[("get_weather", {"city": "Paris"}, None)],
    )
    check(
        '<function name="get_weather"><param name="city">Paris</param><para',
        "minicpm5",
        calls=[("get_weather", '{"city": "Paris"<para', "truncated")],
    )
    check(
        '<function name="get_weather">junk</function> after',
        "minicpm5",
        content=" after",
        calls=[("get_weather", "junk", "malformed parameters")],
    )
    check(
        '<function name="get_wea',
        "minicpm5",
        calls=[("", '<function name="get_wea', "truncated")],
    )


@pytest.mark.parametrize("space", ["", "\u0120"])
def test_minicpm5_reads_tags_without_their_space(space: str) -> None:
    """vLLM tests/tool_parsers/test_minicpm5xml_tool_parser.py (collapsed and tokenizer-space
    tags): the space before ``name`` lost, or decoded as ``Ġ``; text outside tags stays."""
    call = minicpm_call("get_weather", city="上海", days="2").replace(" name=", space + "name=")
    check(
        "Ġ means\u0120this.\n" + call + "\nok",
        "minicpm5",
        content="Ġ means\u0120this.\nok",
        calls=[("get_weather", {"city": "上海", "days": 2}, None)],
    )
    # mixed spellings in one call, and a cut-off collapsed tag keeps the text as written
    mixed = '<function\u0120name="get_weather"><paramname="city">Oslo</param></function>'
    check(mixed, "minicpm5", calls=[("get_weather", {"city": "Oslo"}, None)])
    check(
        '<functionname="get_weather"><paramname="city">Par',
        "minicpm5",
        calls=[("get_weather", '<paramname="city">Par', "truncated")],
    )


def test_solar_open_segments_and_broken_call() -> None:
    check(
        "<|think|>R<|end|><|begin|>assistant<|tool_calls|>"
        "<|tool_call:begin|>a1<|tool_call:name|>get_weather<|tool_call:args|>{}<|tool_call:end|>"
        '<|tool_call:begin|>a2<|tool_call:name|>get_weather<|tool_call:args|>{"x": [1<|tool_call:end|>'
        "<|calls|>",
        "upstage/Solar-Open-100B",
        reasoning="R",
        calls=[
            ("get_weather", {}, None),
            ("get_weather", '{"x": [1', "invalid JSON"),
        ],
    )
    check(
        "<|tool_calls|><|tool_call:begin|>a1<|tool_call:name|>get_weather",
        "solar-open",
        calls=[("get_weather", "", "truncated")],
    )


def test_cohere2moe_prefilled_thinking_and_text_markup() -> None:
    check(
        "I think.<|END_THINKING|><|START_TEXT|>Hello<|END_TEXT|><|END_OF_TURN_TOKEN|>",
        "CohereLabs/North-Mini-Code-1.0",
        content="Hello",
        reasoning="I think.",
    )
    check(
        'Plan.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": '
        '"get_weather", "parameters": {"city": "Paris"}}\n]<|END_ACTION|><|END_OF_TURN_TOKEN|>',
        "cohere2moe",
        reasoning="Plan.",
        calls=[("get_weather", {"city": "Paris"}, None)],
    )


# ------------------------------------------------------------------ policy, every new parser
UNKNOWN_TOOL = {
    "apertus": '<|tools_prefix|>[{"nope": {}}]<|tools_suffix|>',
    "apriel-1.5": '<tool_calls>[{"name": "nope", "arguments": {}}]</tool_calls>',
    "gigachat3": '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "nope", "arguments": {}}',
    "gigachat3.1": '<|function_call|>{"name": "nope", "arguments": {}}',
    "solar-open": "<|tool_calls|><|tool_call:begin|>a<|tool_call:name|>nope<|tool_call:args|>{}<|tool_call:end|>",
    "hy3": HY.format(name="nope", pairs=""),
    "minicpm5": minicpm_call("nope"),
}


@pytest.mark.parametrize("template", sorted(UNKNOWN_TOOL))
def test_unknown_tool_is_kept_and_flagged(template: str) -> None:
    check(UNKNOWN_TOOL[template], template, calls=[("nope", {}, "unknown tool 'nope'")])


TRUNCATED = {
    "apertus": '<|tools_prefix|>[{"get_weather": {"city": "Par',
    "apriel-1.5": '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Par',
    "gigachat3": '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Par',
    "gigachat3.1": '<|function_call|>{"name": "get_weather", "arguments": {"city": "Par',
    "solar-open": '<|tool_calls|><|tool_call:begin|>a<|tool_call:name|>get_weather<|tool_call:args|>{"city": "Par',
    "hy3": "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n"
    "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Par",
    "minicpm5": '<function name="get_weather"><param name="city">Par',
}


@pytest.mark.parametrize("template", sorted(TRUNCATED))
def test_truncated_call_is_flagged_with_its_text(template: str) -> None:
    text = TRUNCATED[template]
    msg = assert_stream_equals_whole(text, template, tools=TOOLS)
    [(name, args, error)] = calls_of(msg)
    assert (name, error) == ("get_weather", "truncated")
    assert isinstance(args, str) and args.endswith("Par")
    assert parse(text, template, tools=TOOLS, truncated=True).finish_reason == "length"


# ------------------------------------------------------------------ wiring
WIRING = [
    ("swiss-ai/Apertus-8B-Instruct-2509", "apertus", "apertus", "apertus", ("<|assistant_end|>",)),
    ("ServiceNow-AI/Apriel-1.5-15b-Thinker", "apriel-1.5", "apriel", "apriel", ("<|end|>", "</s>")),
    ("ServiceNow-AI/Apriel-1.6-15b-Thinker", "apriel-1.6", "apriel", "apriel", ("<|end|>", "</s>")),
    ("ai-sage/GigaChat3-10B-A1.8B", "gigachat3", "gigachat3", None, ("</s>",)),
    (
        "ai-sage/GigaChat3.1-10B-A1.8B",
        "gigachat3.1",
        "gigachat3.1",
        None,
        ("<|message_sep|>", "</s>"),
    ),
    (
        "mistralai/Ministral-3-14B-Reasoning-2512",
        "ministral3-reasoning",
        "mistral",
        "mistral_think",
        ("</s>",),
    ),
    ("upstage/Solar-Open-100B", "solar-open", "solar_open", "solar_open", ("<|flush|>",)),
    ("tencent/Hy3-preview", "hy3", "hunyuan", "hunyuan", ("<｜hy_eos:opensource｜>",)),
    ("openbmb/MiniCPM5-1B", "minicpm5", "minicpm5", "think", ("<|im_end|>",)),
    (
        "CohereLabs/North-Mini-Code-1.0",
        "cohere2moe",
        "command_r",
        "command_a",
        ("<|END_OF_TURN_TOKEN|>",),
    ),
]


@pytest.mark.parametrize(("model_id", "name", "tool", "reasoning", "markers"), WIRING)
def test_model_ids_resolve_to_the_template_and_parsers(
    model_id: str, name: str, tool: str, reasoning: str | None, markers: tuple[str, ...]
) -> None:
    tpl = chatfmt.get_template(model_id)
    assert (tpl.name, tpl.tool_parser, tpl.reasoning_parser) == (name, tool, reasoning)
    assert end_of_turn_markers(model_id) == markers
    assert tpl.generation_config.session_len > 8192


def test_official_jinja_source_resolves_to_the_packaged_template(shared_dir: Any) -> None:
    source = (shared_dir / "reference/templates/upstage-Solar-Open-100B.jinja").read_text()
    tpl = chatfmt.get_template(source)
    assert tpl.tool_parser == "solar_open"


@pytest.mark.parametrize(
    ("template", "marker"),
    [
        ("apertus", "<|tools_prefix|>"),
        ("solar-open", "<|tool_calls|>"),
        ("gigachat3.1", "<|function_call|>"),
        ("hy3", "<tool_call:opensource>"),
    ],
)
def test_a_quoted_marker_is_text_with_token_ids(template: str, marker: str) -> None:
    # The marker written with ordinary tokens (its special id absent from the ids) is text.
    text = f"Write {marker} to call a tool."
    msg = parse(text, template, token_ids=[11, 12, 13], special_token_ids={marker: 99})
    assert msg == {"role": "assistant", "content": text}
