"""Constrained decoding and reply validation: the template's tool-call format, the request's
tools, ``tool_choice`` and ``response_format`` as one grammar (:func:`compile_constraint`),
and what is wrong with a reply (:func:`check_reply`). See ``docs/constraints.md``."""

from __future__ import annotations

from .check import ReplyProblem, check_reply
from .compile import Constraint, compile_constraint
from .format_of import tool_call_format
from .gbnf import gbnf_accepts
from .structural_tag import legacy_structural_tag

__all__ = [
    "Constraint",
    "ReplyProblem",
    "check_reply",
    "compile_constraint",
    "gbnf_accepts",
    "legacy_structural_tag",
    "tool_call_format",
]
