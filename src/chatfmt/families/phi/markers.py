"""phi: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

ASSISTANT = "<|assistant|>"
END = "<|end|>"
FUNCTOOLS = "functools"
IM_SEP = "<|im_sep|>"
SYSTEM = "<|system|>"
USER = "<|user|>"

#: Phi-4-mini (vLLM's ``phi4_mini_json``): ``functools[{"name": …, "arguments": …}, …]``.
PHI4_MINI_FORMAT = ToolCallFormat("phi4_mini_json", "json_list", call_begin=FUNCTOOLS)
