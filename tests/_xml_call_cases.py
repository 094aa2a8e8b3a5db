"""XML-parameter tool calls (Qwen3-Coder, Seed-OSS, Qwen3.5/Nemotron 3) as the peers test them.

vLLM's and llama.cpp's cases, as data (sources cited per block); used by
``parse/test_xml_parameter_calls.py`` and by the derived-parser cross-check.
"""

from __future__ import annotations

from typing import Any


def xml_tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": properties}},
    }


def xml_call(name: str, *pairs: tuple[str, str], nl: str = "\n") -> str:
    """A call as the Qwen3-Coder template writes it (``nl=""``: the Seed-OSS value form)."""
    body = "".join(f"<parameter={k}>{nl}{v}{nl}</parameter>\n" for k, v in pairs)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


# vLLM tests/tool_use/test_qwen3coder_tool_parser.py: the sample tools and model outputs.
VLLM_TOOLS = [
    xml_tool(
        "get_current_weather",
        {
            "city": {"type": "string"},
            "state": {"type": "string"},
            "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]},
        },
    ),
    xml_tool(
        "calculate_area",
        {
            "shape": {"type": "string"},
            "dimensions": {"type": "object"},
            "precision": {"type": "integer"},
        },
    ),
]
DALLAS = xml_call(
    "get_current_weather", ("city", "Dallas"), ("state", "TX"), ("unit", "fahrenheit")
)
ORLANDO = xml_call("get_current_weather", ("city", "Orlando"), ("state", "FL"), ("unit", "celsius"))
DALLAS_ARGS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
VLLM_CASES = [
    # single_tool
    (DALLAS, [("get_current_weather", DALLAS_ARGS)], None),
    # single_tool_with_content
    (
        "Sure! Let me check the weather for you." + DALLAS,
        [("get_current_weather", DALLAS_ARGS)],
        "Sure! Let me check the weather for you.",
    ),
    # single_tool_multiline_param: a JSON object spread over lines, an integer
    (
        xml_call(
            "calculate_area",
            ("shape", "rectangle"),
            ("dimensions", '{"width": 10, \n "height": 20}'),
            ("precision", "2"),
        ),
        [
            (
                "calculate_area",
                {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2},
            )
        ],
        None,
    ),
    # parallel_tools
    (
        DALLAS + "\n" + ORLANDO,
        [
            ("get_current_weather", DALLAS_ARGS),
            ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "celsius"}),
        ],
        None,
    ),
    # tool_with_typed_params
    (
        "Let me calculate that area for you."
        + xml_call(
            "calculate_area",
            ("shape", "circle"),
            ("dimensions", '{"radius": 15.5}'),
            ("precision", "3"),
        ),
        [("calculate_area", {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3})],
        "Let me calculate that area for you.",
    ),
    # missing_closing_parameter_tag: the next <parameter= line ends the value
    (
        "Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n"
        "<parameter=city>\nDallas\n<parameter=state>\nTX\n</parameter>\n"
        "<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>",
        [("get_current_weather", DALLAS_ARGS)],
        "Let me check the weather for you:\n",
    ),
    # no_tools
    (
        "This is a test response without any tool calls",
        [],
        "This is a test response without any tool calls",
    ),
]


# vLLM tests/tool_use/test_seed_oss_tool_parser.py: outputs with the thinking-budget notes.
SEED_TOOLS = [xml_tool("get_weather", {"location": {"type": "string"}, "unit": {"type": "string"}})]
SEED_BUDGET0 = (
    "<seed:think>\n</seed:cot_budget_reflect>\n</seed:cot_budget_reflect>\nThe current thinking "
    "budget is 0, so I will directly start answering the question.\n</seed:think>\n"
    "<seed:tool_call>\n<function=get_weather>\n<parameter=location>Barcelona, Spain</parameter>\n"
    "</function>\n</seed:tool_call>"
)
SEED_BUDGET512 = (
    "<seed:think>The user's current thinking budget is 512.</seed:cot_budget_reflect>\nLet me "
    "analyze the question.\n<seed:cot_budget_reflect>I have used 131 tokens, and there are 381 "
    "tokens remaining for use.</seed:cot_budget_reflect>\n The unit parameter can be omitted since "
    "it's optional.</seed:think>\n<seed:tool_call>\n<function=get_weather>\n<parameter=location>"
    "Barcelona, Spain</parameter>\n</function>\n</seed:tool_call>"
)
SEED_QUOTED = (
    "<seed:think>\nGot it. The format is <seed:tool_call>\n<function=get_weather>\n"
    "<parameter=location>Barcelona, Spain</parameter>\n<parameter=unit>celsius</parameter>\n"
    "</function>\n</seed:tool_call>. Let me go with that.</seed:think><seed:tool_call>\n"
    "<function=get_weather>\n<parameter=location>Barcelona, Spain</parameter>\n"
    "<parameter=unit>celsius</parameter>\n</function>\n</seed:tool_call>"
)


# llama.cpp tests/test-chat.cpp (peg_tester cases for Qwen3.5-4B.jinja and
# NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja): output, template options, expected message.
LCPP_TOOLS = [
    xml_tool("special_function", {"arg1": {"type": "integer"}}),
    xml_tool(
        "special_function_with_opt", {"arg1": {"type": "integer"}, "arg2": {"type": "integer"}}
    ),
    xml_tool("python", {"code": {"type": "string"}}),
    xml_tool("empty_args", {}),
]
LCPP_CALL = "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>"
LCPP_CALL2 = (
    "<tool_call>\n<function=special_function_with_opt>\n<parameter=arg1>\n1\n</parameter>\n"
    "<parameter=arg2>\n2\n</parameter>\n</function>\n</tool_call>"
)
PY_CODE = 'def hello():\n    print("Hello, world!")\n\nhello()'
PY_CALL = f"<tool_call>\n<function=python>\n<parameter=code>\n{PY_CODE}\n</parameter>\n</function>\n</tool_call>"
FAKE_IN_REASONING = "Let's call a tool: " + PY_CALL.replace("Hello, world!", "Not the real call!")
ONE = ("special_function", {"arg1": 1}, None)
LCPP_CASES = [
    (
        "Hello, world!\nWhat's up?",
        {"enable_thinking": False},
        None,
        "Hello, world!\nWhat's up?",
        [],
    ),
    (
        "I'm\nthinking\n</think>\nHello, world!\nWhat's up?",
        {"enable_thinking": True},
        "I'm\nthinking",
        "Hello, world!\nWhat's up?",
        [],
    ),
    (LCPP_CALL, {"enable_thinking": False}, None, None, [ONE]),
    ("I'm\nthinking\n</think>\n" + LCPP_CALL, {}, "I'm\nthinking", None, [ONE]),
    (
        LCPP_CALL + "\n" + LCPP_CALL2,
        {"enable_thinking": False},
        None,
        None,
        [ONE, ("special_function_with_opt", {"arg1": 1, "arg2": 2}, None)],
    ),
    (PY_CALL, {"enable_thinking": False}, None, None, [("python", {"code": PY_CODE}, None)]),
    # a call quoted in the reasoning stays reasoning
    (
        FAKE_IN_REASONING + "\n</think>\n\n" + PY_CALL,
        {"enable_thinking": True},
        FAKE_IN_REASONING,
        None,
        [("python", {"code": PY_CODE}, None)],
    ),
    (
        "<tool_call>\n<function=empty_args>\n</function>\n</tool_call>",
        {"enable_thinking": False},
        None,
        None,
        [("empty_args", {}, None)],
    ),
]
