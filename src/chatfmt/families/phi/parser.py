"""Phi-4-mini: ``functools[{"name": …, "arguments": …}, …]``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.states import State
from .markers import FUNCTOOLS


class Phi4Parser(BlockParser):
    """Phi-4-mini: ``functools[{"name": …, "arguments": …}, …]``."""

    name = "phi4"
    special_markers = (FUNCTOOLS,)
    starts: ClassVar[Mapping[str, State]] = {FUNCTOOLS: Block.GAP}
