"""functionary: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BEGIN_OF_TEXT = "<|begin_of_text|>"
END_OF_TEXT = "<|end_of_text|>"
EOM_ID = "<|eom_id|>"
EOT_ID = "<|eot_id|>"
FUNCTION = "<function="
PROMPT_ARROWS = ">>>"
PYTHON_TAG = "<|python_tag|>"

#: v3.1: ``<function=NAME>{…}</function>``.
FUNCTIONARY_V31_FORMAT = ToolCallFormat(
    "functionary_v31", "json_arguments", call_begin=FUNCTION, name_sep=">", call_end="</function>"
)

#: v3.2: ``NAME\n{…}`` after the prompt's ``>>>``; another call follows ``>>>``.
FUNCTIONARY_V32_FORMAT = ToolCallFormat(
    "functionary_v32", "json_arguments", name_sep="\n", separator=PROMPT_ARROWS
)
