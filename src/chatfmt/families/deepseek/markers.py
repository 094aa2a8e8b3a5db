"""deepseek: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

ASSISTANT = "<｜Assistant｜>"
BEGIN_OF_SENTENCE = "<｜begin▁of▁sentence｜>"
END_OF_SENTENCE = "<｜end▁of▁sentence｜>"
EOT = "<|EOT|>"
INSTRUCTION = "### Instruction:"
RESPONSE = "### Response:"
THINK = "<think>"
THINK_CLOSE = "</think>"
TOOL_CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
TOOL_CALLS_END = "<｜tool▁calls▁end｜>"
TOOL_CALL_BEGIN = "<｜tool▁call▁begin｜>"
TOOL_CALL_END = "<｜tool▁call▁end｜>"
TOOL_OUTPUTS_BEGIN = "<｜tool▁outputs▁begin｜>"
TOOL_OUTPUTS_END = "<｜tool▁outputs▁end｜>"
TOOL_OUTPUT_BEGIN = "<｜tool▁output▁begin｜>"
TOOL_OUTPUT_END = "<｜tool▁output▁end｜>"
TOOL_SEP = "<｜tool▁sep｜>"
USER = "<｜User｜>"

#: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>…``
#: (V3, R1 and its distills).
DEEPSEEK_V3_FORMAT = ToolCallFormat(
    "deepseek_v3",
    "json_arguments",
    calls_begin=TOOL_CALLS_BEGIN,
    calls_end=TOOL_CALLS_END,
    call_begin=TOOL_CALL_BEGIN + "function" + TOOL_SEP,
    call_end="```" + TOOL_CALL_END,
    name_sep="```json",
)
#: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…`` (V3.1).
DEEPSEEK_V31_FORMAT = ToolCallFormat(
    "deepseek_v31",
    "json_arguments",
    calls_begin=TOOL_CALLS_BEGIN,
    calls_end=TOOL_CALLS_END,
    call_begin=TOOL_CALL_BEGIN,
    call_end=TOOL_CALL_END,
    name_sep=TOOL_SEP,
)
DSML = "<｜DSML｜"


def _dsml(block: str) -> ToolCallFormat:
    return ToolCallFormat(
        f"deepseek_dsml_{block}",
        "xml_pairs",
        calls_begin=f"{DSML}{block}>",
        calls_end=f"</{DSML[1:]}{block}>",
        call_begin=f'{DSML}invoke name="',
        name_sep='">',
        call_end=f"</{DSML[1:]}invoke>",
        key_open=f'{DSML}parameter name="',
        key_close='" string="{type}">',
        value_close=f"</{DSML[1:]}parameter>",
        type_words=(("string", "true"), ("*", "false")),
    )


#: DSML: ``<｜DSML｜function_calls>`` (V3.2) or ``<｜DSML｜tool_calls>`` (V4), then
#: ``<｜DSML｜invoke name="NAME">`` and ``<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>``.
DSML_V32_FORMAT = _dsml("function_calls")
DSML_V4_FORMAT = _dsml("tool_calls")
