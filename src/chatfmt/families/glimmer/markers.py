"""glimmer: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

ATEM_FUNCTION_CALLS = "<atem:function_calls>"
ATEM_FUNCTION_CALLS_CLOSE = "</atem:function_calls>"
EOM = "<|eom|>"
EOT = "<|eot|>"
MESSAGE = "<|message|>"
START = "<|start|>"
