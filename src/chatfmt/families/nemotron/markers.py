"""nemotron: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

SPECIAL_12 = "<SPECIAL_12>"
TOOLCALL = "<TOOLCALL>"
TOOLCALL_CLOSE = "</TOOLCALL>"

#: Nemotron Nano v2: ``<TOOLCALL>[{"name": …, "arguments": …}, …]</TOOLCALL>``.
NEMOTRON_JSON_FORMAT = ToolCallFormat(
    "nemotron_json", "json_list", call_begin=TOOLCALL, call_end=TOOLCALL_CLOSE
)
