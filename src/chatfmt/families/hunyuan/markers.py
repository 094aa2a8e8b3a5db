"""hunyuan: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

HY_EOS_OPENSOURCE = "<｜hy_eos:opensource｜>"
THINK_OPENSOURCE = "<think:opensource>"
THINK_OPENSOURCE_CLOSE = "</think:opensource>"
TOOL_SEP_OPENSOURCE = "<tool_sep:opensource>"

#: ``<tool_calls:opensource><tool_call:opensource>NAME<tool_sep:opensource>`` then
#: ``<arg_key:opensource>K</arg_key:opensource><arg_value:opensource>V</arg_value:opensource>``.
HY3_FORMAT = ToolCallFormat(
    "hy3",
    "xml_pairs",
    calls_begin="<tool_calls:opensource>",
    calls_end="</tool_calls:opensource>",
    call_begin="<tool_call:opensource>",
    name_sep=TOOL_SEP_OPENSOURCE,
    call_end="</tool_call:opensource>",
    key_open="<arg_key:opensource>",
    key_close="</arg_key:opensource>",
    value_open="<arg_value:opensource>",
    value_close="</arg_value:opensource>",
)
