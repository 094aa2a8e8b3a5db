"""Seed-OSS: Qwen3-Coder's XML-parameter calls inside ``<seed:tool_call>…</seed:tool_call>``,
reasoning in ``<seed:think>…</seed:think>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import Block
from ...parsing.reasoning import think_parser
from ...parsing.states import State
from ...parsing.xml_function import _FN, Qwen3Coder, Qwen3CoderParser
from .markers import SEED_THINK, SEED_THINK_CLOSE, SEED_TOOL_CALL, SEED_TOOL_CALL_CLOSE


class SeedOssParser(Qwen3CoderParser):
    """Seed-OSS: the same calls inside ``<seed:tool_call>…</seed:tool_call>``."""

    name = "seed_oss"
    close_marker = SEED_TOOL_CALL_CLOSE
    value_newlines = False
    special_markers = (SEED_TOOL_CALL, SEED_TOOL_CALL_CLOSE)
    starts: ClassVar[Mapping[str, State]] = {SEED_TOOL_CALL: Block.GAP, _FN: Qwen3Coder.FN_NAME}
    end = SEED_TOOL_CALL_CLOSE


#: Seed-OSS reasoning: ``<seed:think>…</seed:think>`` (budget notes inside stay reasoning text).
SeedThinkParser = think_parser(
    "seed_think", SEED_THINK, SEED_THINK_CLOSE, qualname="SeedThinkParser"
)
