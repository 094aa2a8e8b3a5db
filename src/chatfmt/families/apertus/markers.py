"""apertus: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

ASSISTANT_END = "<|assistant_end|>"
BOS = "<s>"
INNER_PREFIX = "<|inner_prefix|>"
INNER_SUFFIX = "<|inner_suffix|>"
TOOLS_PREFIX = "<|tools_prefix|>"
TOOLS_SUFFIX = "<|tools_suffix|>"

#: ``<|tools_prefix|>[{"NAME": {…}}, …]<|tools_suffix|>``.
APERTUS_FORMAT = ToolCallFormat(
    "apertus", "json_keyed", call_begin=TOOLS_PREFIX, call_end=TOOLS_SUFFIX
)
