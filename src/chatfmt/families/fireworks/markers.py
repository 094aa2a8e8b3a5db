"""fireworks: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BEGIN_OF_TEXT = "<|begin_of_text|>"
END_OF_TEXT = "<|end_of_text|>"
EOT_ID = "<|eot_id|>"
FUNCTOOLS = "functools"

#: ``functools[{"name": …, "arguments": …}, …]``.
FIREFUNCTION_V2_FORMAT = ToolCallFormat("firefunction_v2", "json_list", call_begin=FUNCTOOLS)
