"""seed: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat
from ...parsing.xml_function import _P as PARAMETER
from ...parsing.xml_function import _P_END as PARAMETER_CLOSE

SEED_BOS = "<seed:bos>"
SEED_EOS = "<seed:eos>"
SEED_THINK = "<seed:think>"
SEED_THINK_CLOSE = "</seed:think>"
SEED_TOOL_CALL = "<seed:tool_call>"
SEED_TOOL_CALL_CLOSE = "</seed:tool_call>"

#: ``<seed:tool_call><function=name><parameter=k>v</parameter>…</function></seed:tool_call>``.
SEED_OSS_FORMAT = ToolCallFormat(
    "seed_oss",
    "xml_function",
    call_begin=SEED_TOOL_CALL,
    call_end=SEED_TOOL_CALL_CLOSE,
    key_open=PARAMETER,
    key_close=">",
    value_close=PARAMETER_CLOSE,
)
