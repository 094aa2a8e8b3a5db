"""Seed-OSS: Qwen3-Coder's XML-parameter calls inside ``<seed:tool_call>…</seed:tool_call>``,
reasoning in ``<seed:think>…</seed:think>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.reasoning import think_parser
from ...parsing.xml_function import _FN, Qwen3CoderParser


class SeedOssParser(Qwen3CoderParser):
    """Seed-OSS: the same calls inside ``<seed:tool_call>…</seed:tool_call>``."""

    name = "seed_oss"
    close_marker = "</seed:tool_call>"
    value_newlines = False
    special_markers = ("<seed:tool_call>", "</seed:tool_call>")
    starts: ClassVar[Mapping[str, str]] = {"<seed:tool_call>": "block", _FN: "fn_name"}
    end = "</seed:tool_call>"


#: Seed-OSS reasoning: ``<seed:think>…</seed:think>`` (budget notes inside stay reasoning text).
SeedThinkParser = think_parser("seed_think", "<seed:think>", "</seed:think>")
