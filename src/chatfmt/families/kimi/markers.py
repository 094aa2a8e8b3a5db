"""kimi: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

CLOSE = "<|close|>"
END_OF_MSG = "<|end_of_msg|>"
IM_ASSISTANT = "<|im_assistant|>"
IM_MIDDLE = "<|im_middle|>"
IM_SYSTEM = "<|im_system|>"
IM_USER = "<|im_user|>"
OPEN = "<|open|>"
SEP = "<|sep|>"
TOOL_CALLS_SECTION_BEGIN = "<|tool_calls_section_begin|>"
TOOL_CALLS_SECTION_END = "<|tool_calls_section_end|>"
TOOL_CALL_ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
TOOL_CALL_BEGIN = "<|tool_call_begin|>"
TOOL_CALL_END = "<|tool_call_end|>"
TOOL_CALL_SECTION_BEGIN = "<|tool_call_section_begin|>"
TOOL_CALL_SECTION_END = "<|tool_call_section_end|>"

#: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>…``.
KIMI_K2_FORMAT = ToolCallFormat(
    "kimi_k2",
    "json_arguments",
    calls_begin=TOOL_CALLS_SECTION_BEGIN,
    calls_end=TOOL_CALLS_SECTION_END,
    call_begin=TOOL_CALL_BEGIN + "functions.",
    call_end=TOOL_CALL_END,
    name_sep=":",
    id_end=TOOL_CALL_ARGUMENT_BEGIN,
)

#: Kimi-K3: ``<|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>`` then
#: ``<|open|>argument key="K" type="string"<|sep|>V<|close|>argument<|sep|>`` per argument.
KIMI_K3_FORMAT = ToolCallFormat(
    "kimi_k3",
    "xml_pairs",
    calls_begin=OPEN + "tools" + SEP,
    calls_end=CLOSE + "tools" + SEP,
    call_begin=OPEN + 'call tool="',
    name_sep='" index="',
    id_end='"' + SEP,
    call_end=CLOSE + "call" + SEP,
    key_open=OPEN + 'argument key="',
    key_close='" type="{type}"' + SEP,
    value_close=CLOSE + "argument" + SEP,
    response=(OPEN + "response" + SEP, CLOSE + "response" + SEP),
    type_words=(
        ("string", "string"),
        ("integer", "number"),
        ("number", "number"),
        ("boolean", "boolean"),
        ("null", "null"),
        ("object", "object"),
        ("array", "array"),
    ),
)
