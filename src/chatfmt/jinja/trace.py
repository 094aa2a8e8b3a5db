"""Segments for Jinja templates: trace the caller's text through a sentinel render.

The template is rendered twice: once with the real data (the output), once with
each traced string replaced by a unique private-use marker and each JSON dump of
caller data (``tojson``) replaced by a region marker. The sentinel render is
split into template text and slots, and aligned onto the real output: template
text must match exactly; a slot matches its real value (or, where the template
trims or cuts the text, the part of it found between the surrounding template
text). Anything else is a failure, never a guess.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

import markupsafe

from ..segments import Segment, SegmentBuilder
from .environment import GEN_CLOSE, GEN_OPEN
from .inputs import R_CLOSE, R_OPEN, S_CLOSE, S_OPEN

_TOKEN = re.compile(f"{S_OPEN}(\\d+){S_CLOSE}|{R_OPEN}(\\d+){R_CLOSE}|{GEN_OPEN}|{GEN_CLOSE}")
_STRAY = re.compile(f"[{S_OPEN}{S_CLOSE}{R_OPEN}{R_CLOSE}{GEN_OPEN}{GEN_CLOSE}]")


@dataclass(frozen=True)
class Slot:
    """A traced value in the sentinel render: its real text and owner message (None: tools)."""

    text: str
    owner: int | None
    exact_only: bool = False


@dataclass(frozen=True)
class Span:
    """A piece of the real output: template text (``slot is None``) or a traced value."""

    start: int
    end: int
    slot: Slot | None


class TraceError(Exception):
    """The sentinel render does not map onto the real one."""


def tokenize(
    sentinel_text: str, fields: Sequence[Slot], regions: Sequence[Slot]
) -> list[str | Slot | bool]:
    """Split a sentinel render into template text (str), slots and generation marks (True/False)."""
    items: list[str | Slot | bool] = []
    pos = 0
    for m in _TOKEN.finditer(sentinel_text):
        if m.start() > pos:
            items.append(sentinel_text[pos : m.start()])
        if m.group(1) is not None:
            items.append(fields[int(m.group(1))])
        elif m.group(2) is not None:
            items.append(regions[int(m.group(2))])
        else:
            items.append(m.group(0) == GEN_OPEN)
        pos = m.end()
    if pos < len(sentinel_text):
        items.append(sentinel_text[pos:])
    for it in items:
        if isinstance(it, str) and _STRAY.search(it):
            raise TraceError("a traced value was cut or transformed by the template")
    return items


def _squash(text: str) -> str:
    return "".join(text.split())


def _candidates(slot: Slot, real: str, pos: int, anchor: str | None) -> list[int]:
    """End positions a slot starting at ``pos`` may take, best first."""
    v = slot.text
    ends: list[int] = []
    escaped = str(markupsafe.escape(v))
    variants = (
        [v, escaped] if slot.exact_only else [v, v.strip(), v.rstrip(), v.lstrip(), escaped, ""]
    )
    for c in variants:
        if real.startswith(c, pos) and pos + len(c) not in ends:
            ends.append(pos + len(c))
    if slot.exact_only:
        # JSON re-indented by the template (``|indent``): same text up to whitespace.
        ok = lambda q: _squash(real[pos:q]) == _squash(v)  # noqa: E731
        limit = pos + 4 * len(v) + 64
    else:
        ok = lambda q: real[pos:q] in v  # noqa: E731
        limit = pos + len(v)
    if anchor is None:
        if ok(len(real)) and len(real) not in ends:
            ends.append(len(real))
    elif anchor:
        q = real.find(anchor, pos)
        while q != -1 and q <= limit:
            if q not in ends and ok(q):
                ends.append(q)
            q = real.find(anchor, q + 1)
    return ends


def align(items: list[str | Slot | bool], real: str) -> tuple[list[Span], list[tuple[int, int]]]:
    """Map tokenized sentinel items onto ``real``: spans covering it, and generation spans."""
    # Search with backtracking over slot choices; (item, pos) pairs that failed are remembered.
    n = len(items)
    failed: set[tuple[int, int]] = set()
    stack: list[tuple[int, int, list[int]]] = []
    choice: list[int] = []
    i, pos = 0, 0
    while True:
        if i == n:
            if pos == len(real):
                break
            ok = False
        else:
            it = items[i]
            ok = True
            if (i, pos) in failed:
                ok = False
            elif isinstance(it, bool):
                choice.append(pos)
                i += 1
                continue
            elif isinstance(it, str):
                if real.startswith(it, pos):
                    choice.append(pos + len(it))
                    pos += len(it)
                    i += 1
                    continue
                ok = False
            else:
                nxt = items[i + 1] if i + 1 < n else None
                anchor = nxt if isinstance(nxt, str) else (None if nxt is None else "")
                ends = _candidates(it, real, pos, anchor)
                if ends:
                    stack.append((i, pos, ends[1:]))
                    choice.append(ends[0])
                    pos = ends[0]
                    i += 1
                    continue
                ok = False
        if not ok:
            # backtrack to the last slot with alternatives left
            if i < n:
                failed.add((i, pos))
            while stack:
                si, spos, rest = stack.pop()
                del choice[si:]
                if rest:
                    stack.append((si, spos, rest[1:]))
                    choice.append(rest[0])
                    i, pos = si + 1, rest[0]
                    break
                failed.add((si, spos))
            else:
                raise TraceError("the template's output does not follow the traced values")
    spans: list[Span] = []
    gens: list[tuple[int, int]] = []
    start = 0
    open_at: int | None = None
    for it, end in zip(items, choice):
        if isinstance(it, bool):
            if it:
                open_at = end
            elif open_at is not None:
                gens.append((open_at, end))
                open_at = None
            continue
        if end > start or isinstance(it, Slot):
            spans.append(Span(start, end, it if isinstance(it, Slot) else None))
        start = end
    return spans, gens


# --------------------------------------------------------------------------- segments
@dataclass(frozen=True)
class TurnInfo:
    """What the template writes around assistant turns (found by probe renders)."""

    generation_prompt: str = ""
    end_of_turn: tuple[str, ...] = ()


def build_segments(
    real: str,
    spans: list[Span],
    gens: list[tuple[int, int]] | None,
    assistant: set[int],
    info: TurnInfo,
) -> list[Segment]:
    """Segments of ``real`` from aligned spans.

    Template text between two messages' values goes to the later message, except
    an end-of-turn marker right after a message's values (and anything before it),
    which stays with that message. Assistant messages are trained from their first
    value (or the end of the generation prompt before it, or of its longest
    line-prefix there) through their end-of-turn marker; with ``{% generation %}`` spans, exactly those are trained, and
    the template text inside one belongs to its assistant message.
    """
    runs: list[list[int]] = []  # [owner, first start, last end], consecutive values of one message
    for s in spans:
        if s.slot is None or s.slot.owner is None:
            continue
        if runs and runs[-1][0] == s.slot.owner:
            runs[-1][2] = s.end
        else:
            runs.append([s.slot.owner, s.start, s.end])
    cuts: list[tuple[int, int | None]] = [(0, runs[0][0] if runs else None)]
    trained: list[tuple[int, int]] = []
    boundary = 0
    for k, (owner, first, last) in enumerate(runs):
        nxt = runs[k + 1] if k + 1 < len(runs) else None
        eot_end = _after_eot(real, last, nxt[1] if nxt else len(real), info.end_of_turn)
        if owner in assistant and gens is None:
            t_start = first
            # the generation prompt, else its longest line-prefix (a prompt that prefills an
            # empty thinking block, e.g. Gemma 4's, while rendered turns write the opener only)
            for opener in _openers(info.generation_prompt):
                q = real.rfind(opener, boundary, first)
                if q != -1:
                    t_start = q + len(opener)
                    break
            trained.append((t_start, eot_end or last))
        boundary = eot_end or last
        cuts.append((boundary, nxt[0] if nxt else None))
    #: generation span -> its assistant message (the k-th span is the k-th assistant reply)
    gen_owner: dict[tuple[int, int], int] = {}
    if gens is not None:
        trained = list(gens)
        if len(trained) == len(assistant):
            gen_owner = dict(zip(trained, sorted(assistant), strict=True))
    points = sorted(
        {
            0,
            len(real),
            *(c for c, _ in cuts),
            *(t for pair in trained for t in pair),
            *(s.start for s in spans),
            *(s.end for s in spans),
        }
    )
    cut_pos = [c for c, _ in cuts]
    span_starts = [s.start for s in spans]
    b = SegmentBuilder()
    for a, z in itertools.pairwise(points):
        if z <= a:
            continue
        msg = cuts[bisect_right(cut_pos, a) - 1][1]
        si = bisect_right(span_starts, a) - 1
        slot = spans[si].slot if si >= 0 and spans[si].end > a else None
        span = next(((ts, te) for ts, te in trained if ts <= a and z <= te), None)
        is_trained = span is not None
        if span in gen_owner:
            msg = gen_owner[span]  # template text inside a reply's generation span is the reply's
        if slot is not None:
            b.content(real[a:z], slot.owner if slot.owner is not None else None, is_trained)
        else:
            b.control(real[a:z], msg, is_trained)
    return b.segments


def _openers(prompt: str) -> list[str]:
    """``prompt`` and its proper prefixes that end a line, longest first."""
    cuts = [i + 1 for i, ch in enumerate(prompt[:-1]) if ch == "\n"]
    return [prompt, *(prompt[:i] for i in reversed(cuts))] if prompt else []


def _after_eot(real: str, start: int, stop: int, markers: tuple[str, ...]) -> int | None:
    """End of the first end-of-turn marker in ``real[start:stop]`` (``None`` if there is none)."""
    best = None
    for mk in markers:
        if not mk:
            continue
        q = real.find(mk, start, stop)
        if q != -1 and (best is None or q < best[0]):
            best = (q, q + len(mk))
    return best[1] if best else None


def search_spans(real: str, values: list[tuple[int, str]]) -> list[Span]:
    """Last resort: find each message text in order in the output (no sentinels)."""
    spans: list[Span] = []
    pos = 0
    for owner, v in values:
        q, text = real.find(v, pos), v
        if q == -1 and v.strip():
            text = v.strip()
            q = real.find(text, pos)
        if q == -1:
            raise TraceError(f"messages[{owner}]: its text does not appear in the output")
        if q > pos:
            spans.append(Span(pos, q, None))
        spans.append(Span(q, q + len(text), Slot(text, owner)))
        pos = q + len(text)
    if pos < len(real):
        spans.append(Span(pos, len(real), None))
    return spans
