"""internlm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

ACTION_END = "<|action_end|>"
ACTION_START = "<|action_start|>"
BOS = "<s>"
EOA = "<eoa>"
EOH = "<eoh>"
EOS = "</s>"
INTERPRETER = "<|interpreter|>"
PLUGIN = "<|plugin|>"

#: ``<|action_start|><|plugin|>\n{"name": …, "parameters": {…}}<|action_end|>`` per call.
INTERNLM2_FORMAT = ToolCallFormat(
    "internlm2",
    "json_call",
    call_begin=ACTION_START + PLUGIN,
    call_end=ACTION_END,
    args_key="parameters",
)
