"""minicpm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BOS = "<s>"
FUNCTION_NAME = '<function name="'

#: ``<function name="NAME"><param name="K">V</param>…</function>`` per call.
MINICPM5_FORMAT = ToolCallFormat(
    "minicpm5",
    "xml_pairs",
    call_begin=FUNCTION_NAME,
    name_sep='">',
    call_end="</function>",
    key_open='<param name="',
    key_close='">',
    value_close="</param>",
)
