"""Functionary v3.1 / v3.2 and the ``<function=NAME>{…}</function>`` calls they share with Llama 3.1.

* ``<function=NAME>{json}</function>`` — Functionary v3.1 and Llama 3.1's custom tool
  calls (:class:`FunctionTagCalls`, also used by ``llama3_json``); the end tag is optional.
* Functionary v3.1 ``<|python_tag|>`` then code (or a JSON object): a call of the
  ``python`` tool with arguments ``{"code": CODE}`` (or that object).
* Functionary v3.2: ``>>>RECIPIENT\\n`` segments, several in a row; recipient ``all`` is
  text for the user, any other name a call whose JSON arguments follow (``python``:
  code, as above). The generation prompt ends with ``>>>``, so the output starts with
  the first recipient; a leading ``>>>`` is accepted too. A segment whose recipient
  line is not a name is text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import auto
from typing import Any, ClassVar

from ...parsing.base import Emitter
from ...parsing.blocks import Block, BlockParser, RawArgs
from ...parsing.special import SpecialTokens
from ...parsing.states import State
from .markers import FUNCTION, PROMPT_ARROWS, PYTHON_TAG

FUNC_OPEN, FUNC_CLOSE = FUNCTION, "</function>"
ARROW = PROMPT_ARROWS
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
#: Longest tool name / recipient line held while waiting for its end.
_MAX_NAME = 256


class CodeArgs:
    """Streams code as the arguments ``{"code": "…"}`` of a ``python`` call (JSON-escaped)."""

    __slots__ = ("index", "out")

    def __init__(self, out: Emitter, index: int) -> None:
        self.out = out
        self.index = index
        out.args(index, '{"code": "')

    def feed(self, text: str) -> None:
        if text:
            self.out.args(self.index, json.dumps(text, ensure_ascii=False)[1:-1])

    def close(self) -> None:
        self.out.args(self.index, '"}')


class FunctionTag(State):
    """States of :class:`FunctionTagCalls` beyond :class:`~.blocks.Block`."""

    FN_HEAD = auto()  # the name in ``<function=NAME>``
    FN_ARGS = auto()  # its JSON arguments
    FN_TAIL = auto()  # an optional ``</function>``
    PY_ARGS = auto()  # JSON arguments of a ``python`` call
    PY_CODE = auto()  # code of a ``python`` call


class FunctionTagCalls(BlockParser):
    """States for ``<function=NAME>{…}</function>``: a subclass maps :data:`FUNC_OPEN` to
    :attr:`FunctionTag.FN_HEAD` in its ``starts``. Also the ``python`` code call (``PY_CODE`` after
    :meth:`start_python`), which ends at :attr:`python_end` or the end of output."""

    states: ClassVar[type[State] | None] = FunctionTag

    #: The marker that ends a ``python`` code call (None: the end of output).
    python_end: ClassVar[str | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.code_args: CodeArgs | None = None

    def _s_fn_head(self) -> bool:
        close = self.buf.find(">", self.pos, self.pos + _MAX_NAME + 1)
        if close < 0 and not self.final and len(self.buf) - self.pos <= _MAX_NAME:
            return False
        name = self.buf[self.pos : close] if close >= 0 else self.buf[self.pos :]
        if close < 0 and self.final and _NAME.fullmatch(name):
            index = self.out.start_call(name, error="truncated")  # cut inside the tag
            self.out.args(index, "")
            self.pos = len(self.buf)
            return False
        if close < 0 or not _NAME.fullmatch(name):
            self.out.content(FUNC_OPEN)  # not a call tag: prose
            self.end_block()
            return True
        self.pos = close + 1
        self.raw = RawArgs(self.out, self.out.start_call(name))
        self.state = FunctionTag.FN_ARGS
        return True

    def _s_fn_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        if status == "failed":
            self.cur_end = FUNC_CLOSE
            self.state = Block.JUNK
        else:
            self.state = FunctionTag.FN_TAIL
        return True

    def _s_fn_tail(self) -> bool:
        start = self.pos
        if not self.skip_ws():
            if not self.final:
                self.pos = start  # whitespace before a possible end tag: undecided
            return False
        hit = self.at_marker(FUNC_CLOSE)
        if hit is None:
            self.pos = start
            return False
        if not hit:
            self.pos = start  # no end tag: what follows is text
        self.end_block()
        return True

    def start_python(self) -> bool:
        """After the python marker: a JSON object is the arguments, anything else code."""
        if not self.skip_ws():
            if self.final:
                self.end_block()  # the marker at the very end: markup
            return False
        index = self.out.start_call("python")
        if self.buf[self.pos] == "{":
            self.raw = RawArgs(self.out, index)
            self.state = FunctionTag.PY_ARGS
        else:
            self.code_args = CodeArgs(self.out, index)
            self.state = FunctionTag.PY_CODE
        return True

    def _s_py_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        if status == "failed":
            self.cur_end = self.python_end
            self.state = Block.JUNK
        else:
            self.end_block()
        return True

    def _s_py_code(self) -> bool:
        code = self.code_args
        assert code is not None
        if self.python_end is None:
            end = resume = len(self.buf)
            marker = None
        else:
            end, marker, resume = self.end_set(self.python_end).split(self.buf, self.pos, self.real)
            if self.final and marker is None:
                end = resume = len(self.buf)
        code.feed(self.buf[self.pos : end])
        self.pos = resume
        if marker is None and not self.final:
            return False
        self.code_args = None
        code.close()
        self.after_code(marker is not None)
        return True

    def after_code(self, at_end_marker: bool) -> None:
        """A ``python`` code call ended (at :attr:`python_end` if ``at_end_marker``)."""
        self.end_block()


class _V31(State):
    """States of :class:`FunctionaryV31Parser` beyond :class:`FunctionTag`."""

    PY_HEAD = auto()  # after ``<|python_tag|>``


class FunctionaryV31Parser(FunctionTagCalls):
    """Functionary v3.1 (Llama 3.1 based): ``<function=NAME>{…}</function>`` and
    ``<|python_tag|>`` code (see module doc)."""

    states = _V31

    name = "functionary_v31"
    special_markers = (PYTHON_TAG,)
    starts: ClassVar[Mapping[str, State]] = {
        FUNC_OPEN: FunctionTag.FN_HEAD,
        PYTHON_TAG: _V31.PY_HEAD,
    }

    def _s_py_head(self) -> bool:
        return self.start_python()


class _V32(State):
    """States of :class:`FunctionaryV32Parser` beyond :class:`FunctionTag`."""

    V32_START = auto()  # a leading ``>>>``?
    V32_RECIPIENT = auto()  # the recipient line
    V32_PYTHON = auto()  # after a ``python`` recipient: JSON or code
    V32_ARGS = auto()  # JSON arguments
    V32_JUNK = auto()
    V32_AFTER = auto()  # after a call


class FunctionaryV32Parser(FunctionTagCalls):
    """Functionary v3.2: ``>>>RECIPIENT\\n`` segments (see module doc).

    States: :class:`_V32` (an ``all`` segment is :attr:`~.blocks.Block.TEXT`).
    """

    states = _V32

    name = "functionary_v32"
    starts: ClassVar[Mapping[str, State]] = {ARROW: _V32.V32_RECIPIENT}
    python_end = ARROW

    def __init__(self, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]) -> None:
        super().__init__(out, budget, options)
        self.state = _V32.V32_START
        self._arrow = ""  # the ">>>" before the recipient being read ("" when prefilled)
        self._opening = True  # the recipient line that opens the reply comes next

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self._arrow = ARROW

    def _s_v32_start(self) -> bool:
        hit = self.at_marker(ARROW)
        if hit is None:
            return False
        self._arrow = ARROW if hit else ""
        self.state = _V32.V32_RECIPIENT
        return True

    def _s_v32_recipient(self) -> bool:
        nl = self.buf.find("\n", self.pos, self.pos + _MAX_NAME + 1)
        if nl < 0 and not self.final and len(self.buf) - self.pos <= _MAX_NAME:
            return False
        line = self.buf[self.pos : nl] if nl >= 0 else self.buf[self.pos :]
        recipient = line.rstrip(" \t\r")  # right after ">>>": no leading space
        if nl < 0 and self.final and recipient == "all":
            self.pos = len(self.buf)  # "all" and nothing to say
            return False
        if not _NAME.fullmatch(recipient):
            self.out.content(self._arrow)  # not a recipient line: text
            self.end_block()
            return True
        if nl < 0:  # cut off after the name
            index = self.out.start_call(recipient, error="truncated")
            self.out.args(index, "")
            self.pos = len(self.buf)
            return False
        opening, self._opening = self._opening, False
        self.pos = nl + 1
        if recipient == "all":
            if opening and self.out.separators.before_content:
                # the line's newline goes to the emitter, which leaves out the template's
                # own whitespace and keeps the model's (without a template: all markup)
                self.pos = nl
            self.end_block()
        elif recipient == "python":
            self.state = _V32.V32_PYTHON
        else:
            self.raw = RawArgs(self.out, self.out.start_call(recipient))
            self.state = _V32.V32_ARGS
        return True

    def _s_v32_python(self) -> bool:
        if self.skip_ws() and self.buf[self.pos] == "{":  # JSON arguments, as for any call
            self.raw = RawArgs(self.out, self.out.start_call("python"))
            self.state = _V32.V32_ARGS
            return True
        return self.start_python()

    def after_code(self, at_end_marker: bool) -> None:
        if at_end_marker:  # the code ended at ">>>": a new segment
            self._arrow = ARROW
            self.state = _V32.V32_RECIPIENT
        else:
            self.end_block()

    def _s_v32_args(self) -> bool:
        status = self.feed_raw_args()
        if status is None:
            return False
        if status == "failed":
            self.cur_end = ARROW
            self.state = _V32.V32_JUNK
        else:
            self.state = _V32.V32_AFTER
        return True

    def _s_v32_junk(self) -> bool:
        more = self._s_junk()
        if self.state is Block.TEXT:  # the junk ended at ">>>": a new segment
            self._arrow = ARROW
            self.state = _V32.V32_RECIPIENT
        return more

    def _s_v32_after(self) -> bool:
        start = self.pos
        if not self.skip_ws():
            if not self.final:
                self.pos = start
            return False
        hit = self.at_marker(ARROW)
        if hit is None:
            self.pos = start
            return False
        if hit:
            self._arrow = ARROW
            self.state = _V32.V32_RECIPIENT
        else:
            self.pos = start  # text after a call without a new segment: content
            self.end_block()
        return True
