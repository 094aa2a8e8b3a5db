"""NVIDIA Nemotron Nano v2: ``<TOOLCALL>[{"name": …, "arguments": …}, …]</TOOLCALL>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.states import State
from .markers import TOOLCALL, TOOLCALL_CLOSE


class NemotronJsonParser(BlockParser):
    """A JSON list of call objects (or bare objects) between ``<TOOLCALL>`` and ``</TOOLCALL>``."""

    name = "nemotron_json"
    starts: ClassVar[Mapping[str, State]] = {TOOLCALL: Block.GAP}
    end = TOOLCALL_CLOSE
    skips_reasoning = (TOOLCALL,)
