"""reka: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

SEP = "<sep>"
