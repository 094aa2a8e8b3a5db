"""laguna: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

ASSISTANT_CLOSE = "</assistant>"
EOS = "〈|EOS|〉"
