"""qwen: control tokens and tool-call formats (ChatML's tokens are in :mod:`..chatml.markers`,
the Hermes ``<tool_call>`` tags in :mod:`..hermes.markers`)."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat
from ...parsing.xml_function import _P as PARAMETER
from ...parsing.xml_function import _P_END as PARAMETER_CLOSE
from ..hermes.markers import TOOL_CALL, TOOL_CALL_CLOSE

#: Qwen3-Coder / Qwen3.5: ``<tool_call><function=name><parameter=k>v</parameter>…</function></tool_call>``.
QWEN3_CODER_FORMAT = ToolCallFormat(
    "qwen3_coder",
    "xml_function",
    call_begin=TOOL_CALL,
    call_end=TOOL_CALL_CLOSE,
    key_open=PARAMETER,
    key_close=">",
    value_close=PARAMETER_CLOSE,
)
