"""Convert rendered prompts of one template family to another.

A :class:`PromptParser` learns a template's role markers from its own segments: it
renders probe conversations, and the CONTROL text around each message's content is
that role's opening and closing marker (the lead-in before the first message, and
the generation prompt, likewise). A rendered prompt is then read back as a sequence
of ``open(role) content close(role)`` turns. This covers ChatML-like and spec
templates (role-marked turns in message order); templates that rewrite or reorder
content (system folded into the first user turn, tool JSON blocks) are refused.

Tool use is not converted: a turn that holds the source template's tool markup (a tool
call, a tool result, the tool definitions) would be copied through as plain text, so such
a row is refused with the message index and the markup found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ChatFmtError, ParseError, TemplateError, UnsupportedFeatureError
from ..segments import Kind, Segment, join
from ..template import Template

_ROLES_WITH_SYSTEM = ("system", "user", "assistant", "user", "assistant")
_ROLES_NO_SYSTEM = ("user", "assistant", "user", "assistant")


_CODE_FENCE = re.compile(r"`{3}\w*")


def _probe_text(i: int) -> str:
    return f"chatfmtprobe{i}x"


_PLAIN_PROBE: list[dict[str, Any]] = [
    {"role": "system", "content": "chatfmtprobesystem"},
    {"role": "user", "content": "chatfmtprobeuser"},
    {"role": "assistant", "content": "chatfmtprobeassistant"},
    {"role": "user", "content": "chatfmtprobeuser2"},
]
_PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "chatfmtprobetool",
            "description": "chatfmtprobedescription",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string", "description": "chatfmtprobeparam"}},
                "required": ["q"],
            },
        },
    }
]
_PROBE_CALL: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call0",
            "type": "function",
            "function": {"name": "chatfmtprobetool", "arguments": {"q": "chatfmtprobearg"}},
        }
    ],
}
_PROBE_RESULT = {
    "role": "tool",
    "tool_call_id": "call0",
    "name": "chatfmtprobetool",
    "content": "chatfmtproberesult",
}


def _control_texts(
    template: Template, conversations: list[list[dict[str, Any]]], **kwargs: Any
) -> list[tuple[str, int | None, int]]:
    """``(text, message, conversation)`` of every CONTROL segment of the renders that work."""
    found = []
    for n, messages in enumerate(conversations):
        for gen in (True, False):
            try:
                segs = template.segments(messages, add_generation_prompt=gen, **kwargs)
            except ChatFmtError:
                continue
            found += [(s.text, s.message, n) for s in segs if s.kind is Kind.CONTROL]
    return found


def tool_markers(template: Template) -> tuple[str, ...]:
    """Lines of control text ``template`` writes only for tools, tool calls and tool results.

    Found by rendering probe conversations with and without tool use: a tool turn's control
    text, or the tool definitions' (cut where plain turns' markers occur), that appears in no
    plain render's control text is tool markup (``<tool_call>``, ``{"name": "``, a tools
    preamble). Pieces shorter than 7 characters and bare code fences are left out: they are
    ordinary text too often (``Args:``, a ```` ```python ```` fence).
    """
    if not template.supports_tools:
        return ()
    plain_runs = [_PLAIN_PROBE, _PLAIN_PROBE[1:], _PLAIN_PROBE[:3], _PLAIN_PROBE[1:3]]
    plain = [t for t, _, _ in _control_texts(template, plain_runs)]
    plain_all = "\n".join(plain)
    user = _PLAIN_PROBE[1]
    tool_runs = [
        [user, _PROBE_CALL, _PROBE_RESULT, {"role": "assistant", "content": "chatfmtprobedone"}],
        [user, _PROBE_CALL, _PROBE_RESULT],
        [user, _PROBE_CALL],
        [user],
    ]
    # the tool turns of each run; in the last one (no call) the tool definitions may be
    # written into the user's turn, so every message of it counts
    tool_turns: list[set[int] | None] = [{1, 2}, {1, 2}, {1}, None]
    markers: set[str] = set()
    for text, message, n in _control_texts(template, tool_runs, tools=_PROBE_TOOLS):
        turns = tool_turns[n]
        if message is not None and turns is not None and message not in turns:
            continue
        for known in sorted(plain, key=len, reverse=True):
            if known.strip():
                text = text.replace(known, "\0")  # a cut: NUL is in no template
        for chunk in text.split("\0"):
            chunk = chunk.strip()
            if len(chunk) >= 7 and not _CODE_FENCE.fullmatch(chunk) and chunk not in plain_all:
                markers.add(chunk)
    return tuple(sorted(markers, key=lambda m: (-len(m), m)))


@dataclass
class _Markers:
    lead: str
    opens: list[tuple[str, str]]  # (role, open marker)
    closes: list[tuple[str, str]]  # (role, close marker)


class PromptParser:
    """Reads prompts rendered by ``template`` back into messages."""

    def __init__(self, template: Template) -> None:
        self.template = template
        with_sys = self._markers(_ROLES_WITH_SYSTEM)
        no_sys = self._markers(_ROLES_NO_SYSTEM)
        self.leads = sorted({with_sys.lead, no_sys.lead}, key=len, reverse=True)
        self._lead_has_system = {no_sys.lead: False, with_sys.lead: True}
        opens = {*with_sys.opens, *no_sys.opens}
        closes = {*with_sys.closes, *no_sys.closes}
        self.opens = sorted((rm for rm in opens if rm[1]), key=lambda rm: len(rm[1]), reverse=True)
        #: Roles without an opening marker (e.g. a bare system text): only readable first.
        self.bare_first = sorted({r for r, o in opens if not o})
        if len(self.bare_first) > 1:
            raise TemplateError(f"template {template.name!r}: several roles have no opening marker")
        self.closes: dict[str, list[str]] = {}
        for role, close in closes:
            self.closes.setdefault(role, []).append(close)
        full = template.render(
            [{"role": r, "content": _probe_text(i)} for i, r in enumerate(_ROLES_NO_SYSTEM)],
            add_generation_prompt=True,
        )
        closed = template.render(
            [{"role": r, "content": _probe_text(i)} for i, r in enumerate(_ROLES_NO_SYSTEM)],
            add_generation_prompt=False,
        )
        self.generation_prompt = full[len(closed) :] if full.startswith(closed) else ""
        self._self_check()
        #: Tool markup of this template; a prompt holding any of it is refused (see module doc).
        self.tool_markers = tool_markers(template)

    def refuse_tool_use(self, messages: list[dict[str, Any]]) -> None:
        """Raise :class:`UnsupportedFeatureError` for the first message holding tool markup."""
        for index, message in enumerate(messages):
            content = message["content"]
            for marker in self.tool_markers:
                if marker in content:
                    raise UnsupportedFeatureError(
                        f"holds {self.template.name!r} tool markup {marker!r} (a tool call, tool "
                        "result or tool definitions); convert does not convert tool use between "
                        "formats and would copy it as plain text",
                        index=index,
                        field="content",
                    )

    def _self_check(self) -> None:
        """Refuse templates whose prompts this parser cannot read back exactly."""
        tpl = self.template
        msgs = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello\nthere"},
            {"role": "assistant", "content": "Hi!"},
            {"role": "user", "content": "Bye"},
            {"role": "assistant", "content": "ok"},
        ]
        for sample in (msgs, msgs[1:], msgs[:-1], msgs[1:-1]):
            for gen in (True, False):
                try:
                    text = tpl.render(sample, add_generation_prompt=gen)
                except ChatFmtError:
                    continue
                try:
                    parsed, got_gen = self.parse(text)
                    ok = (
                        parsed == sample
                        and tpl.render(parsed, add_generation_prompt=got_gen) == text
                    )
                except ChatFmtError:
                    ok = False
                if not ok:
                    raise TemplateError(
                        f"template {tpl.name!r}: its prompts cannot be parsed back by role markers "
                        "(context-dependent markers); convert does not cover it"
                    )

    def _markers(self, roles: tuple[str, ...]) -> _Markers:
        tpl = self.template
        msgs = [{"role": r, "content": _probe_text(i)} for i, r in enumerate(roles)]
        try:
            segs = tpl.segments(msgs, add_generation_prompt=False)
        except ChatFmtError as exc:
            raise TemplateError(
                f"template {tpl.name!r} cannot render a probe conversation: {exc}"
            ) from None
        content_at = []
        for k, s in enumerate(segs):
            if s.kind is Kind.CONTENT:
                if s.text != _probe_text(s.message if s.message is not None else -1):
                    raise TemplateError(
                        f"template {tpl.name!r} changes or moves message content; prompts cannot be parsed back"
                    )
                content_at.append(k)
        if [segs[k].message for k in content_at] != list(range(len(roles))):
            raise TemplateError(
                f"template {tpl.name!r} does not render messages in order as separate turns"
            )
        lead = join(segs[: content_at[0]] if content_at else segs)
        opens: list[tuple[str, str]] = []
        closes: list[tuple[str, str]] = []
        bounds = [*content_at, len(segs)]
        for i, k in enumerate(content_at):
            gap: list[Segment] = list(segs[k + 1 : bounds[i + 1]])
            close = join(s for s in gap if s.message == i)
            nxt = join(s for s in gap if s.message != i)
            closes.append((roles[i], close))
            if i + 1 < len(roles):
                opens.append((roles[i + 1], nxt))
        # The first message's opening marker is the end of the lead-in that belongs to it.
        first_open = join(s for s in segs[: content_at[0]] if s.message == 0)
        opens.append((roles[0], first_open))
        lead = lead[: len(lead) - len(first_open)]
        return _Markers(lead, opens, closes)

    def parse(self, text: str) -> tuple[list[dict[str, Any]], bool]:
        """Messages of a rendered prompt, and whether it ends with the generation prompt."""
        pos = -1
        for lead in self.leads:
            if text.startswith(lead):
                pos = len(lead)
                break
        if pos < 0:
            raise ParseError(f"prompt does not start like a {self.template.name!r} prompt")
        messages: list[dict[str, Any]] = []
        gen = False
        while pos < len(text):
            if self.generation_prompt and text[pos:] == self.generation_prompt:
                gen = True
                break
            found = self._turn(text, pos, first=not messages)
            if found is None:
                raise ParseError(
                    f"cannot read a {self.template.name!r} turn at character {pos}: {text[pos : pos + 40]!r}"
                )
            role, content, pos = found
            messages.append({"role": role, "content": content})
        return messages, gen

    def _turn(self, text: str, pos: int, *, first: bool) -> tuple[str, str, int] | None:
        candidates = list(self.opens) + ([(r, "") for r in self.bare_first] if first else [])
        for role, open_ in candidates:
            if not text.startswith(open_, pos):
                continue
            start = pos + len(open_)
            best: tuple[int, int] | None = None
            for close in self.closes.get(role, [""]):
                idx = start
                while True:
                    idx = text.find(close, idx) if close else self._next_open(text, idx)
                    if idx < 0:
                        break
                    after = idx + len(close)
                    if self._boundary(text, after):
                        if best is None or idx < best[0]:
                            best = (idx, after)
                        break
                    idx += 1
                    if idx > len(text):
                        break
            if best is not None:
                return role, text[start : best[0]], best[1]
        return None

    def _next_open(self, text: str, start: int) -> int:
        hits = [text.find(o, start) for _, o in self.opens]
        hits = [h for h in hits if h >= 0]
        if self.generation_prompt and text.endswith(self.generation_prompt):
            hits.append(len(text) - len(self.generation_prompt))
        hits.append(len(text))
        return min(hits)

    def _boundary(self, text: str, pos: int) -> bool:
        if pos == len(text):
            return True
        if self.generation_prompt and text[pos:] == self.generation_prompt:
            return True
        return any(text.startswith(o, pos) for _, o in self.opens)


def convert_prompt(text: str, source: PromptParser, target: Template) -> str:
    """Re-render a prompt of ``source``'s template with ``target``."""
    messages, gen = source.parse(text)
    source.refuse_tool_use(messages)
    return target.render(messages, add_generation_prompt=gen)


def convert_dataset(
    input_path: Any,
    output_path: Any,
    *,
    source: Template,
    target: Template,
    field: str = "text",
    errors_path: Any = None,
) -> dict[str, Any]:
    """Convert the ``field`` prompts of a dataset from ``source`` to ``target`` (JSONL output).

    Every row keeps its other columns. Failing rows go to the errors file (JSONL
    ``{"row", "kind", "reason"}``), which exists only when a row failed (one left by an earlier
    run is removed). The output is written beside its path and moved there when at least one
    row converted; when none did, the output path is left as it was (``counts["output"]`` is
    then ``None``).
    """
    import json
    import os
    from pathlib import Path

    from .pipeline import default_errors_path
    from .readers import parse_row, read_rows

    parser = PromptParser(source)
    out = Path(output_path)
    err = Path(errors_path) if errors_path else default_errors_path(out)
    counts: dict[str, Any] = {"rows": 0, "converted": 0, "errors": 0, "output": None}
    counts["errors_file"] = None
    err.unlink(missing_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    efh = None
    try:
        with partial.open("wb") as fh:
            for index, raw in read_rows(Path(input_path)):
                counts["rows"] += 1
                try:
                    row = parse_row(raw)
                    text = row.get(field) if isinstance(row, dict) else None
                    if not isinstance(text, str):
                        raise ParseError(f"row has no string field {field!r}")
                    row[field] = convert_prompt(text, parser, target)
                    line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
                except (ValueError, ChatFmtError) as exc:
                    counts["errors"] += 1
                    if efh is None:
                        efh = err.open("w", encoding="utf-8", errors="backslashreplace")
                        counts["errors_file"] = str(err)
                    kind = "tool_use" if isinstance(exc, UnsupportedFeatureError) else "error"
                    reason = f"{type(exc).__name__}: {exc}"
                    record = {"row": index, "kind": kind, "reason": reason}
                    efh.write(json.dumps(record, ensure_ascii=False) + "\n")
                    continue
                counts["converted"] += 1
                fh.write(line)
        if counts["converted"]:
            partial.replace(out)
            counts["output"] = str(out)
    finally:
        partial.unlink(missing_ok=True)
        if efh is not None:
            efh.close()
    return counts
