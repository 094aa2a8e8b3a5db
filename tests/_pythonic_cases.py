"""Pythonic tool calls as the peers test them: vLLM's and SGLang's cases, as data.

(id, parser, model output, expected calls, expected content); used by ``parse/test_pythonic.py``
and by the derived-parser cross-check (the LFM2 cases).
"""

from __future__ import annotations

from typing import Any

Calls = list[tuple[str, dict[str, Any]]]

LFM_START, LFM_END = "<|tool_call_start|>", "<|tool_call_end|>"


def lfm_block(body: str, after: str = "") -> str:
    return f"{LFM_START}[{body}]{LFM_END}{after}"


# vLLM tests/tool_parsers/test_pythonic_tool_parser.py, test_llama4_pythonic_tool_parser.py
# and test_lfm2_tool_parser.py share these call texts and expectations.
SIMPLE = (
    "get_weather(city='San Francisco', metric='celsius')",
    ("get_weather", {"city": "San Francisco", "metric": "celsius"}),
)
MORE_TYPES = (
    "register_user(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, "
    "role=None, passed_test=True, aliases=['John', 'Johnny'])",
    (
        "register_user",
        {
            "name": "John Doe",
            "age": 37,
            "address": {"city": "San Francisco", "state": "CA"},
            "role": None,
            "passed_test": True,
            "aliases": ["John", "Johnny"],
        },
    ),
)
NO_ARGS = ("get_weather()", ("get_weather", {}))
EMPTY_DICT = (
    "do_something_cool(additional_data={})",
    ("do_something_cool", {"additional_data": {}}),
)
EMPTY_LIST = ("do_something_cool(steps=[])", ("do_something_cool", {"steps": []}))
ESCAPED = (
    r"""get_weather(city='Martha\'s Vineyard', metric='\"cool units\"')""",
    ("get_weather", {"city": "Martha's Vineyard", "metric": '"cool units"'}),
)

#: (id, parser, model output, expected calls, expected content)
PEER_CASES: list[tuple[str, str, str, Calls, str | None]] = [
    # vLLM tests/tool_parsers/test_pythonic_tool_parser.py
    ("pythonic/no_call", "pythonic", "How can I help you today?", [], "How can I help you today?"),
    *(
        (f"pythonic/{name}", "pythonic", f"[{text}]", [call], None)
        for name, (text, call) in {
            "simple": SIMPLE,
            "more_types": MORE_TYPES,
            "parameterless": NO_ARGS,
            "empty_dict": EMPTY_DICT,
            "empty_list": EMPTY_LIST,
            "escaped_string": ESCAPED,
        }.items()
    ),
    (
        "pythonic/parallel",
        "pythonic",
        f"[{SIMPLE[0]}, {MORE_TYPES[0]}]",
        [SIMPLE[1], MORE_TYPES[1]],
        None,
    ),
    (
        "pythonic/large_steps",
        "pythonic",
        f"[{SIMPLE[0]}, {NO_ARGS[0]}, {EMPTY_LIST[0]}]",
        [SIMPLE[1], NO_ARGS[1], EMPTY_LIST[1]],
        None,
    ),
    # vLLM tests/tool_parsers/test_llama4_pythonic_tool_parser.py
    (
        "llama4/python_tag",
        "llama4_pythonic",
        "<|python_start|>[get_weather(city='LA', metric='C')]<|python_end|>",
        [("get_weather", {"city": "LA", "metric": "C"})],
        None,
    ),
    (
        "llama4/parallel_no_spaces",
        "llama4_pythonic",
        "[get_weather(city='LA',metric='C'),register_user(name='Doe',age=9)]",
        [
            ("get_weather", {"city": "LA", "metric": "C"}),
            ("register_user", {"name": "Doe", "age": 9}),
        ],
        None,
    ),
    (
        "llama4/python_tag_parallel",
        "llama4_pythonic",
        "<|python_start|>[get_weather(city='LA', metric='C'),register_user(name='Doe', age=9)]",
        [
            ("get_weather", {"city": "LA", "metric": "C"}),
            ("register_user", {"name": "Doe", "age": 9}),
        ],
        None,
    ),
    # SGLang test/registered/.../test_pythonic_detector.py (TestPythonicDetector)
    (
        "sglang/leading_text",
        "pythonic",
        "I will check the weather for you. [get_weather(city='Tokyo')]",
        [("get_weather", {"city": "Tokyo"})],
        "I will check the weather for you. ",
    ),
    (
        "sglang/double_quotes",
        "pythonic",
        '[get_weather(city="London", unit="celsius")]',
        [("get_weather", {"city": "London", "unit": "celsius"})],
        None,
    ),
    (
        "sglang/dict_arg",
        "pythonic",
        "[search(query={'key': 'value', 'nested': {'a': 1}})]",
        [("search", {"query": {"key": "value", "nested": {"a": 1}}})],
        None,
    ),
    (
        "sglang/python_tokens",
        "pythonic",
        "<|python_start|>[get_weather(city='Tokyo')]<|python_end|>",
        [("get_weather", {"city": "Tokyo"})],
        None,
    ),
    ("sglang/no_bracket", "pythonic", "get_weather(city='Tokyo')", [], "get_weather(city='Tokyo')"),
    # vLLM tests/tool_parsers/test_lfm2_tool_parser.py
    ("lfm2/no_call", "lfm2", "How can I help you today?", [], "How can I help you today?"),
    (
        "lfm2/simple",
        "lfm2",
        lfm_block("get_candidate_status(candidate_id='12345')"),
        [("get_candidate_status", {"candidate_id": "12345"})],
        None,
    ),
    ("lfm2/more_types", "lfm2", lfm_block(MORE_TYPES[0]), [MORE_TYPES[1]], None),
    ("lfm2/escaped", "lfm2", lfm_block(ESCAPED[0]), [ESCAPED[1]], None),
    (
        "lfm2/content_after",
        "lfm2",
        lfm_block(
            "get_candidate_status(candidate_id='12345')",
            "\nChecking the current status of candidate ID 12345.",
        ),
        [("get_candidate_status", {"candidate_id": "12345"})],
        "\nChecking the current status of candidate ID 12345.",
    ),
    (
        "lfm2/dotted_name",
        "lfm2",
        lfm_block(
            "grocery.orderIngredients(ingredientList=[{'name': 'Lasagna noodles', 'amount': 250, "
            "'unit': 'g'}], deliveryAddress='845 Willow Lane, Springfield, IL 62704')"
        ),
        [
            (
                "grocery.orderIngredients",
                {
                    "ingredientList": [{"name": "Lasagna noodles", "amount": 250, "unit": "g"}],
                    "deliveryAddress": "845 Willow Lane, Springfield, IL 62704",
                },
            )
        ],
        None,
    ),
    (
        "lfm2/bracket_in_string",
        "lfm2",
        lfm_block("exec(command='grep -F \"]\" log.txt')"),
        [("exec", {"command": 'grep -F "]" log.txt'})],
        None,
    ),
    (
        "lfm2/multiline_string",
        "lfm2",
        lfm_block("exec(command='cat > f.py << EOF\nimport csv\nprint(1)\nEOF')"),
        [("exec", {"command": "cat > f.py << EOF\nimport csv\nprint(1)\nEOF"})],
        None,
    ),
    (
        "lfm2/set_arg",
        "lfm2",
        lfm_block("label(tags={'urgent', 'bug'})"),
        [("label", {"tags": ["urgent", "bug"]})],
        None,
    ),
    (
        "lfm2/leading_zero",
        "lfm2",
        lfm_block("set_date(month=07, day=05)"),
        [("set_date", {"month": 7, "day": 5})],
        None,
    ),
    (
        "lfm2/nul_byte",
        "lfm2",
        lfm_block("exec(command='printf a\x00b')"),
        [("exec", {"command": "printf a\x00b"})],
        None,
    ),
    (
        "lfm2/nested_quote",
        "lfm2",
        lfm_block("bash(command='sed -n '360,450p' /testbed/sympy/matrices/common.py')"),
        [("bash", {"command": "sed -n '360,450p' /testbed/sympy/matrices/common.py"})],
        None,
    ),
    (
        "lfm2/nested_python_c",
        "lfm2",
        lfm_block(
            "bash(command='cd /testbed && python3 -c \"from sympy import latex\n"
            "print(latex(3*x, mul_symbol='\\,'))\"')"
        ),
        [
            (
                "bash",
                {
                    "command": "cd /testbed && python3 -c \"from sympy import latex\nprint(latex(3*x, mul_symbol='\\,'))\""
                },
            )
        ],
        None,
    ),
    ("lfm2/empty_block", "lfm2", f"{LFM_START}[]{LFM_END}", [], None),
    ("lfm2/empty_block_space", "lfm2", f"{LFM_START}[ ]{LFM_END}", [], None),
    (
        "lfm2/ws_after_start",
        "lfm2",
        f"{LFM_START} [get_candidate_status(candidate_id='12345')]{LFM_END}",
        [("get_candidate_status", {"candidate_id": "12345"})],
        None,
    ),
    (
        "lfm2/leading_and_trailing_content",
        "lfm2",
        "Let me check. " + lfm_block("get_candidate_status(candidate_id='12345')", "\nDone."),
        [("get_candidate_status", {"candidate_id": "12345"})],
        "Let me check. \nDone.",
    ),
    (
        "lfm2/list_of_json_dicts",
        "lfm2",
        lfm_block(
            'grocery.orderIngredients(ingredientList=[{"name": "apple", "quantity": "2"}, '
            '{"name": "bread", "quantity": "1"}])'
        ),
        [
            (
                "grocery.orderIngredients",
                {
                    "ingredientList": [
                        {"name": "apple", "quantity": "2"},
                        {"name": "bread", "quantity": "1"},
                    ]
                },
            )
        ],
        None,
    ),
    # llama.cpp tests/test-chat.cpp (LFM2-8B-A1B peg_tester cases)
    (
        "llamacpp/lfm2_int",
        "lfm2",
        lfm_block("special_function(arg1=1)"),
        [("special_function", {"arg1": 1})],
        None,
    ),
    (
        "llamacpp/lfm2_string",
        "lfm2",
        lfm_block('get_time(city="XYZCITY")'),
        [("get_time", {"city": "XYZCITY"})],
        None,
    ),
    (
        "llamacpp/lfm2_parallel",
        "lfm2",
        lfm_block("special_function(arg1=1), special_function_with_opt(arg1=1, arg2=2)"),
        [("special_function", {"arg1": 1}), ("special_function_with_opt", {"arg1": 1, "arg2": 2})],
        None,
    ),
    (
        "llamacpp/lfm2_escaped_newline",
        "lfm2",
        lfm_block("python(code=\"def hello():\\\\n    print('hey')\")"),
        [("python", {"code": "def hello():\\n    print('hey')"})],
        None,
    ),
    ("llamacpp/lfm2_empty_args", "lfm2", lfm_block("empty_args()"), [("empty_args", {})], None),
    # vLLM tests/tool_parsers/test_jamba_tool_parser.py
    ("jamba/no_call", "jamba", "This is a test", [], "This is a test"),
    (
        "jamba/single",
        "jamba",
        ' <tool_calls>[\n    {"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}}\n]</tool_calls>',
        [("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})],
        None,
    ),
    (
        "jamba/with_content",
        "jamba",
        ' Sure! let me call the tool for you.<tool_calls>[\n    {"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}}\n]</tool_calls>',
        [("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})],
        " Sure! let me call the tool for you.",
    ),
    (
        "jamba/parallel",
        "jamba",
        ' <tool_calls>[\n    {"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}},\n'
        '    {"name": "get_current_weather", "arguments": {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}}\n]</tool_calls>',
        [
            ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}),
            ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}),
        ],
        None,
    ),
    (
        "jamba/name_then_arguments",
        "jamba",
        '<tool_calls>[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX"}}]</tool_calls>',
        [("get_current_weather", {"city": "Dallas", "state": "TX"})],
        None,
    ),
]
