"""hunyuan: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

HY_EOS_OPENSOURCE = "<｜hy_eos:opensource｜>"
THINK_OPENSOURCE = "<think:opensource>"
THINK_OPENSOURCE_CLOSE = "</think:opensource>"
TOOL_SEP_OPENSOURCE = "<tool_sep:opensource>"
