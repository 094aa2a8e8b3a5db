"""fireworks: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

BEGIN_OF_TEXT = "<|begin_of_text|>"
END_OF_TEXT = "<|end_of_text|>"
EOT_ID = "<|eot_id|>"
FUNCTOOLS = "functools"
