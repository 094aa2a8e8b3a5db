"""functionary: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

BEGIN_OF_TEXT = "<|begin_of_text|>"
END_OF_TEXT = "<|end_of_text|>"
EOM_ID = "<|eom_id|>"
EOT_ID = "<|eot_id|>"
FUNCTION = "<function="
PROMPT_ARROWS = ">>>"
PYTHON_TAG = "<|python_tag|>"
