"""FireFunction v2 (Fireworks, Llama 3 based): `` functools[{"name": …, "arguments": …}, …]``.

The Phi-4-mini ``functools[…]`` format (same block machine as ``phi4``); here
``functools`` is ordinary text (no special token in the Llama 3 vocabulary), and the
template writes a space before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...parsing.blocks import Block, BlockParser
from ...parsing.states import State
from .markers import FUNCTOOLS


class FireFunctionV2Parser(BlockParser):
    """``functools[…]`` calls after the text (see module doc)."""

    name = "firefunction_v2"
    starts: ClassVar[Mapping[str, State]] = {FUNCTOOLS: Block.GAP}
