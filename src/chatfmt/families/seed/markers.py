"""seed: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

SEED_BOS = "<seed:bos>"
SEED_EOS = "<seed:eos>"
SEED_THINK = "<seed:think>"
SEED_THINK_CLOSE = "</seed:think>"
SEED_TOOL_CALL = "<seed:tool_call>"
SEED_TOOL_CALL_CLOSE = "</seed:tool_call>"
