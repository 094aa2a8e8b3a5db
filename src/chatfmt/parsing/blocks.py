"""Shared machinery for families whose calls are JSON objects inside marked blocks.

:class:`JsonCall` binds one :class:`~.json_stream.CallObject` to the emitter
(header once the name is known, then the raw argument text). :class:`BlockParser`
is the state machine for "start marker, JSON call object(s) or a JSON list of
them, optional end marker", configured by class attributes; families add states
for their own heads (Mistral ``name{...}``, InternLM2 ``<|plugin|>``, …).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from enum import auto
from typing import Any, ClassVar

from .base import WS, Emitter, FormatParser
from .json_stream import CallObject, JsonScanner
from .markers import MarkerSet, marker_set
from .special import SpecialTokens
from .states import State, StateMachine


class JsonCall:
    """One streamed call object: emits its header and raw arguments.

    ``defer`` (for formats without a start marker): emit nothing until the name
    is known and the arguments key has been seen; if the object ends or breaks
    before that, ``status`` becomes ``"prose"`` and ``raw`` holds its text.

    ``id_keys``: keys whose string value is the id the model wrote for the call (Mistral's
    ``{"name", "arguments", "id"}``), kept where ``valid_id`` accepts it. A call's first
    delta carries its id, so with ``id_keys`` the header waits until the id is read or
    the object ends (its arguments are held until then; nothing else is).
    """

    __slots__ = (
        "defer",
        "id_keys",
        "index",
        "obj",
        "out",
        "pending",
        "raw",
        "status",
        "valid_id",
    )

    def __init__(
        self,
        out: Emitter,
        *,
        name_keys: Collection[str] = ("name",),
        args_keys: Collection[str] = ("arguments", "parameters"),
        defer: bool = False,
        id_keys: Collection[str] = (),
        valid_id: Callable[[str], bool] | None = None,
    ) -> None:
        self.obj = CallObject(name_keys, args_keys, id_keys)
        self.out = out
        self.defer = defer
        self.id_keys = id_keys
        self.valid_id = valid_id
        self.index: int | None = None
        self.pending: list[str] = []
        self.raw: list[str] = []
        self.status: str | None = None  # None (running), "done", "failed", "prose"

    def _header(self) -> None:
        assert self.obj.name is not None
        call_id = self.obj.call_id
        if call_id is not None and self.valid_id is not None and not self.valid_id(call_id):
            call_id = None
        self.index = self.out.start_call(self.obj.name, call_id=call_id)
        for text in self.pending:
            self.out.args(self.index, text)
        self.pending.clear()
        self.raw.clear()

    def _events(self, events: list[tuple[str, Any]]) -> None:
        for kind, value in events:
            if kind == "args":
                if self.index is None:
                    self.pending.append(value)
                else:
                    self.out.args(self.index, value)
            elif kind == "name" or kind == "args_start" or kind == "id":
                if (
                    self.index is None
                    and self.obj.name is not None
                    and (self.obj.args_seen or not self.defer)
                    and (self.obj.call_id is not None or not self.id_keys)
                ):
                    self._header()
            elif kind == "done":
                if self.index is None:
                    if self.defer:
                        self.status = "prose"
                        return
                    if self.obj.name is None:
                        self._nameless("no tool name in call object")
                        self.status = "failed"
                        return
                    self._header()
                assert self.index is not None
                if not self.obj.args_seen:
                    self.out.args(self.index, "{}")
                self.out.check_arguments(self.index)
                self.status = "done"
            elif kind == "error":
                if self.index is None and self.obj.name is not None and not self.defer:
                    self._header()  # it waited for an id (see ``id_keys``)
                if self.index is None:
                    if self.defer:
                        self.status = "prose"
                        return
                    self._nameless(str(value))
                else:
                    self.out.fail(self.index, str(value))
                self.status = "failed"

    def _nameless(self, reason: str) -> None:
        raw = "".join(self.raw)
        self.index = self.out.start_call(self.obj.name or "", error=reason)
        self.out.args(self.index, raw)
        self.raw.clear()

    def feed(self, text: str, pos: int) -> int:
        """Scan ``text[pos:]``; returns where the object ended or broke (or ``len(text)``)."""
        stop, events = self.obj.feed(text, pos)
        if self.index is None:
            self.raw.append(text[pos:stop])
        self._events(events)
        return stop

    def close(self) -> None:
        self._events(self.obj.close())


class Block(State):
    """States of :class:`BlockParser`."""

    TEXT = auto()  # content, up to a start marker
    GAP = auto()  # in a block, between call objects
    AFTER_LIST = auto()  # after the ``]`` of a list of calls, before the block's end
    CALL = auto()  # inside a JSON call object
    CODE = auto()  # code of a code-interpreter call
    JUNK = auto()  # the rest of a broken call, up to the block's end


class BlockParser(StateMachine, FormatParser):
    """Text with marked blocks of JSON call objects (see module doc).

    ``starts`` maps each start marker to the state it enters: :attr:`Block.GAP`
    (call objects until ``end``) or a state of the subclass.
    """

    states: ClassVar[type[State] | None] = Block
    starts: ClassVar[Mapping[str, State]] = {}
    #: End marker of blocks (per start marker in ``ends``, else ``end``).
    end: ClassVar[str | None] = None
    ends: ClassVar[Mapping[str, str | None]] = {}
    name_keys: ClassVar[tuple[str, ...]] = ("name",)
    args_keys: ClassVar[tuple[str, ...]] = ("arguments", "parameters")
    #: Keys of a call object whose value is the id the model wrote (see :class:`JsonCall`).
    id_keys: ClassVar[tuple[str, ...]] = ()
    #: Stop the block after one call object (no lists or separators).
    single: ClassVar[bool] = False
    #: The marker that ends a code-interpreter call (state ``CODE``, see :meth:`_s_code`).
    code_end: ClassVar[str] = ""

    @classmethod
    def configured_states(cls) -> Iterable[Any]:
        return cls.starts.values()

    def __init__(self, out: Emitter, budget: SpecialTokens, options: Mapping[str, Any]) -> None:
        super().__init__(out, budget, options)
        #: Arguments of the open call being streamed as one raw JSON value (see :meth:`feed_raw_args`).
        self.raw: RawArgs | None = None
        #: Code of the open code-interpreter call (state ``CODE``).
        self.code: CodeBody | None = None
        #: Text gathered by :meth:`_gather` (a name, a key, a value) and not yet decided.
        self._parts: list[str] = []
        #: The closing marker :meth:`_gather` stopped at last.
        self._last = ""
        self.state = Block.TEXT
        self.text_markers = marker_set(tuple(self.starts), frozenset(self.special_markers))
        self.cur_end: str | None = self.end
        self._end_sets: dict[str, MarkerSet] = {}
        self.call: JsonCall | None = None
        self.junk_index: int | None = None
        self.in_list = False
        self.block_calls = 0

    # ------------------------------------------------------------------ helpers
    def enter(self, marker: str) -> None:
        """A start marker was consumed: switch to its state."""
        self.cur_end = self.ends.get(marker, self.end)
        self.block_calls = 0
        self.in_list = False
        self.state = self.starts[marker]

    def at_marker(self, marker: str) -> bool | None:
        """At ``pos``: True if ``marker`` is there (consumed), None if undecided yet, else False."""
        rest = self.buf[self.pos : self.pos + len(marker)]
        if rest == marker:
            if marker in self.special_markers and not self.real(marker, self.pos):
                return False
            self.pos += len(marker)
            return True
        if marker.startswith(rest) and not self.final:
            return None
        return False

    def at_any(self, *markers: str) -> str | None:
        """At ``pos``: the first of ``markers`` that is there (consumed, as :meth:`at_marker`),
        None while one may still be coming, ``""`` when none is."""
        for marker in markers:
            hit = self.at_marker(marker)
            if hit is None:
                return None
            if hit:
                return marker
        return ""

    def _gather(self, *closing: str, special: bool = True) -> str | None:
        """Gather text up to the first of ``closing`` (consumed; ``self._last`` says which).

        Returns the gathered text, or None while waiting for more (or, at the end of the
        stream, when no closing marker came: the text stays in ``self._parts``). With
        ``special=False`` the markers are plain text (no special-token check).
        """
        end, marker, resume = self.end_set(*closing).split(
            self.buf, self.pos, self.real if special else None
        )
        if marker is None and self.final:
            end = len(self.buf)
        self._parts.append(self.buf[self.pos : end])
        self.pos = end
        if marker is None:
            return None
        self.pos = resume
        self._last = marker
        text = "".join(self._parts)
        self._parts = []
        return text

    def _gathered(self) -> int:
        """Characters gathered by :meth:`_gather` and not yet decided."""
        return sum(map(len, self._parts))

    def end_set(self, *markers: str) -> MarkerSet:
        """A cached :class:`MarkerSet` of ``markers``."""
        key = "\0".join(markers)
        found = self._end_sets.get(key)
        if found is None:
            found = self._end_sets[key] = marker_set(markers, frozenset(self.special_markers))
        return found

    def end_block(self) -> None:
        self.state = Block.TEXT
        self.in_list = False

    def skip_gap(self) -> bool | None:
        """Whitespace between a block's parts, consumed only once what follows it is known.
        ``None``: something follows (the position is after the whitespace). Otherwise the
        step's result: at the final chunk the block ends (``True``); before it, the position
        goes back and the machine waits for more (``False``)."""
        start = self.pos
        if self.skip_ws():
            return None
        if self.final:
            self.end_block()
            return True
        self.pos = start
        return False

    def start_call(self) -> None:
        self.call = JsonCall(
            self.out,
            name_keys=self.name_keys,
            args_keys=self.args_keys,
            # a template that writes no ids back: nothing to wait for
            id_keys=self.id_keys if self.out.separators.call_ids else (),
            valid_id=self.valid_id,
        )
        self.state = Block.CALL

    @staticmethod
    def valid_id(call_id: str) -> bool:
        """Whether a call id the model wrote is kept (else one is made)."""
        return True

    def feed_raw_args(self) -> str | None:
        """Stream :attr:`raw` on; ``None`` while it needs more text, else ``"done"``/``"failed"``.

        A failed call becomes :attr:`junk_index` (its rest is junk text); the
        caller picks the next state.
        """
        raw = self.raw
        assert raw is not None
        self.pos = raw.feed(self.buf, self.pos)
        if raw.status is None:
            if not self.final:
                return None
            raw.close()
        self.raw = None
        if raw.status == "failed":
            self.junk_index = raw.index
        assert raw.status is not None
        return raw.status

    # ------------------------------------------------------------------ states
    def _s_text(self) -> bool:
        end, marker, resume = self.text_markers.split(self.buf, self.pos, self.real)
        if self.final and marker is None:
            end = resume = len(self.buf)
        self.out.content(self.buf[self.pos : end])
        self.pos = resume
        if marker is None:
            return False
        self.enter(marker)
        return True

    def _s_gap(self) -> bool:
        if not self.skip_ws():
            return False
        if self.cur_end:
            hit = self.at_marker(self.cur_end)
            if hit is None:
                return False
            if hit:
                self.end_block()
                return True
        c = self.buf[self.pos]
        if c == "{" and not (self.single and self.block_calls):
            self.start_call()
            return True
        if c == "[" and not self.in_list and not self.block_calls and not self.single:
            self.in_list = True
            self.pos += 1
            return True
        if c == "]" and self.in_list:
            self.pos += 1
            self.in_list = False
            self.state = Block.AFTER_LIST
            return True
        if c in ",;" and self.block_calls and not self.single:
            self.pos += 1
            return True
        if not self.block_calls:
            self.junk_index = self.out.start_call("", error="not a tool call")
            self.state = Block.JUNK
            return True
        self.end_block()
        return True

    def _s_after_list(self) -> bool:
        if self.cur_end is None:
            self.end_block()
            return True
        if not self.skip_ws():
            return False
        hit = self.at_marker(self.cur_end)
        if hit is None:
            return False
        self.end_block()
        return True

    def _s_call(self) -> bool:
        call = self.call
        assert call is not None
        self.pos = call.feed(self.buf, self.pos)
        if call.status is None:
            if self.final:
                call.close()
            else:
                return False
        self.call = None
        self.block_calls += 1
        if call.status == "failed":
            self.junk_index = call.index
            self.state = Block.JUNK
        elif call.status == "prose":
            self.out.content("".join(call.raw))
            self.end_block()
        else:
            self.state = Block.GAP
        return True

    def _s_code(self) -> bool:
        """Code of a code-interpreter call, up to :attr:`code_end` (or the end of output)."""
        code = self.code
        assert code is not None
        end, marker, resume = self.end_set(self.code_end).split(self.buf, self.pos, self.real)
        last = marker is not None or self.final
        if self.final and marker is None:
            end = resume = len(self.buf)
        code.feed(self.buf[self.pos : end], last)
        self.pos = resume
        if not last:
            return False
        self.code = None
        self.end_block()
        return True

    def _s_junk(self) -> bool:
        """Text of a broken call: appended to its raw arguments until the block end."""
        assert self.junk_index is not None
        if self.cur_end is None:
            end, marker, resume = len(self.buf), None, len(self.buf)
        else:
            end, marker, resume = self.end_set(self.cur_end).split(self.buf, self.pos, self.real)
            if self.final and marker is None:
                end = resume = len(self.buf)
        self.out.args(self.junk_index, self.buf[self.pos : end])
        self.pos = resume
        if marker is None:
            return False
        self.junk_index = None
        self.end_block()
        return True


class RawArgs:
    """The arguments of an already-opened call, given as one raw JSON value."""

    __slots__ = ("index", "out", "scanner", "status")

    def __init__(self, out: Emitter, index: int) -> None:
        self.out = out
        self.index = index
        self.scanner = JsonScanner()
        self.status: str | None = None

    def feed(self, text: str, pos: int) -> int:
        if not self.scanner.started:
            n = len(text)
            while pos < n and text[pos] in WS:
                pos += 1
        stop = self.scanner.feed(text, pos)
        self.out.args(self.index, text[pos:stop])
        if self.scanner.done:
            self.out.check_arguments(self.index)
            self.status = "done"
        elif self.scanner.failed:
            self.out.fail(self.index, f"invalid JSON arguments: {self.scanner.error}")
            self.status = "failed"
        return stop

    def close(self) -> None:
        if self.status is None:
            self.scanner.close()
            if self.scanner.done:
                self.out.check_arguments(self.index)
                self.status = "done"
            else:
                self.out.fail(self.index, "truncated")
                self.status = "failed"


class CodeBody:
    """Streams the code of a code-interpreter call, without a surrounding ``` fence."""

    __slots__ = ("_fenced", "_head", "_tail", "index", "out")

    def __init__(self, out: Emitter, index: int) -> None:
        self.out = out
        self.index = index
        self._head: str | None = ""  # undecided start (None once decided)
        self._fenced = False
        self._tail = ""  # held-back trailing whitespace/backticks

    def feed(self, text: str, last: bool) -> None:
        """Code text; ``last`` when the call's end was reached."""
        if self._head is not None:
            head = (self._head + text).lstrip(WS)
            if head.startswith("```"):
                nl = head.find("\n")
                if nl < 0 and not last:
                    self._head = head
                    return
                self._fenced = True
                text = head[nl + 1 :] if nl >= 0 else ""
            elif "```".startswith(head) and head and not last:
                self._head = head
                return
            elif not head and not last:
                self._head = ""
                return
            else:
                text = head
            self._head = None
        text = self._tail + text
        if last:
            body = text.rstrip(WS)
            if self._fenced and body.endswith("```"):
                body = body[:-3].rstrip(WS)
            self.out.code(self.index, body)
            self._tail = ""
            return
        cut = len(text)
        while cut and text[cut - 1] in "` \t\r\n":
            cut -= 1
        self.out.code(self.index, text[:cut])
        self._tail = text[cut:]
