"""FireFunction v2 (Fireworks, Llama 3 based): `` functools[{"name": …, "arguments": …}, …]``.

The Phi-4-mini ``functools[…]`` format; here ``functools`` is ordinary text (no special
token in the Llama 3 vocabulary), and the template writes a space before it.
"""

from __future__ import annotations

from typing import ClassVar

from .base import register_tool_parser
from .granite import Phi4Parser


class FireFunctionV2Parser(Phi4Parser):
    """``functools[…]`` calls after the text (see module doc)."""

    name = "firefunction_v2"
    special_markers: ClassVar[tuple[str, ...]] = ()


register_tool_parser(FireFunctionV2Parser, "firefunction")
