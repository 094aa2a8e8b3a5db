"""internlm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

ACTION_END = "<|action_end|>"
ACTION_START = "<|action_start|>"
BOS = "<s>"
EOA = "<eoa>"
EOH = "<eoh>"
EOS = "</s>"
INTERPRETER = "<|interpreter|>"
PLUGIN = "<|plugin|>"
