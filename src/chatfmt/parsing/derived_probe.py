"""Probing a template: render probe conversations, diff them, classify the call form."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..errors import ChatFmtError, ParseError
from .derived_format import DerivedFormat

PROBE_NAME, PROBE_NAME_2 = "chatfmt_probe_fn", "chatfmt_probe_two"
PROBE_ARGS: dict[str, Any] = {"text": "probe-alpha", "count": 42, "opts": {"flag": True}}
PROBE_ARGS_2: dict[str, Any] = {"text": "probe-beta", "count": 7, "opts": {"flag": False}}
PROBE_CONTENT, PROBE_REASONING = "chatfmt probe answer", "chatfmt probe thought"
_USER = [{"role": "user", "content": "chatfmt probe question"}]
_PROPS = {"text": {"type": "string"}, "count": {"type": "integer"}, "opts": {"type": "object"}}
PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": "A probe tool.",
            "parameters": {"type": "object", "properties": _PROPS, "required": ["text"]},
        },
    }
    for name in (PROBE_NAME, PROBE_NAME_2)
]

#: Marker-like units (special tokens, tags) compared whole when markers are diffed.
_ATOM = re.compile(r"<[^<>\s]{1,80}>|\[/?[A-Za-z_]{2,32}\]|\s+|.", re.S)
#: A reasoning marker must be one such unit (e.g. ``<think>``, ``[THINK]``, ``<seed:think>``).
_TAG = re.compile(r"<[^<>\s]{1,80}>|\[/?[A-Za-z_]{2,32}\]")


def _call_id(index: int) -> str:
    return f"prb{index}abcde"  # 9 alphanumerics (Mistral requires them)


def _call(index: int, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": _call_id(index),
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


_TURNS: dict[str, dict[str, Any]] = {
    "content": {"role": "assistant", "content": PROBE_CONTENT},
    "one": {"role": "assistant", "content": "", "tool_calls": [_call(0, PROBE_NAME, PROBE_ARGS)]},
    "two": {
        "role": "assistant",
        "content": "",
        "tool_calls": [_call(0, PROBE_NAME, PROBE_ARGS), _call(1, PROBE_NAME_2, PROBE_ARGS_2)],
    },
    "reasoning": {
        "role": "assistant",
        "content": PROBE_CONTENT,
        "reasoning_content": PROBE_REASONING,
    },
}


def _shared_head(prompt: str, full: str) -> int:
    """Where the turn starts in ``full``: after the generation prompt, else after the
    longest common prefix made of whole marker-like units (a prefilled ``<think>`` is
    not cut in half)."""
    if full.startswith(prompt):
        return len(prompt)
    n = min(len(prompt), len(full))
    i = 0
    while i < n and prompt[i] == full[i]:
        i += 1
    start = max(prompt.rfind("\n", 0, i) + 1, 0)
    return start + len(_atom_prefix(prompt[start:], full[start:]))


def _render_turns(tpl: Any, opts: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The text each probe turn adds after the generation prompt; and the render errors."""
    turns: dict[str, str] = {}
    errors: dict[str, str] = {}
    tools = PROBE_TOOLS if "tools" in tpl.jinja_source else None
    try:
        prompt = tpl.render(_USER, add_generation_prompt=True, tools=tools, **opts)
    except ChatFmtError as exc:
        return turns, {kind: f"the template cannot render a question: {exc}" for kind in _TURNS}
    for kind, turn in _TURNS.items():
        variants = [turn, {**turn, "content": None}] if "tool_calls" in turn else [turn]
        for variant in variants:  # calls with content "" or None (DeepSeek V3 needs None)
            try:
                full = tpl.render(
                    [*_USER, variant], add_generation_prompt=False, tools=tools, **opts
                )
            except ChatFmtError as exc:
                errors[kind] = str(exc)
                continue
            turns[kind] = full[_shared_head(prompt, full) :]
            if PROBE_NAME in turns[kind]:
                break
    return turns, errors


def _label(tpl: Any) -> str:
    origin = getattr(tpl, "origin", None)
    name = getattr(tpl, "name", "?")
    return f"{name!r} ({origin})" if origin and origin != "Jinja source" else repr(name)


def _atoms(text: str) -> list[str]:
    return _ATOM.findall(text)


def _atom_prefix(a: str, b: str) -> str:
    """The longest common prefix of ``a`` and ``b`` made of whole marker-like units."""
    out = []
    for x, y in zip(_atoms(a), _atoms(b)):
        if x != y:
            break
        out.append(x)
    return "".join(out)


def _atom_suffix(a: str, b: str) -> str:
    out = []
    for x, y in zip(reversed(_atoms(a)), reversed(_atoms(b))):
        if x != y:
            break
        out.append(x)
    return "".join(reversed(out))


def _json_values(text: str) -> list[tuple[int, int, Any]]:
    """The outermost JSON objects/lists in ``text`` as ``(start, end, value)``."""
    dec = json.JSONDecoder()
    found = []
    pos = 0
    while pos < len(text):
        c = text[pos]
        if c in "{[":
            try:
                value, end = dec.raw_decode(text, pos)
            except ValueError:
                pos += 1
                continue
            found.append((pos, end, value))
            pos = end
        else:
            pos += 1
    return found


def _is_args(value: Any, args: Mapping[str, Any]) -> bool:
    if value == args:
        return True
    if isinstance(value, str):
        try:
            return bool(json.loads(value) == args)
        except ValueError:
            return False
    return False


def _call_keys(value: Any, name: str, args: Mapping[str, Any]) -> tuple[str, str] | None:
    """(name key, arguments key) if ``value`` is a call object of ``name`` with ``args``."""
    if not isinstance(value, dict):
        return None
    name_key = next((k for k, v in value.items() if v == name), None)
    args_key = next((k for k, v in value.items() if _is_args(v, args)), None)
    if name_key is None or args_key is None:
        return None
    return name_key, args_key


class _Unclassified(Exception):
    """The tool-call form was found but not understood (the message says what was seen)."""


def _strip_turn(text: str, head: str, tail: str, stops: tuple[str, ...]) -> str:
    """A rendered turn without the head/tail a plain answer has (end-of-turn marker, …)."""
    if head and text.startswith(head):
        text = text[len(head) :]
    return _cut_tail(text, tail, stops)


def _cut_tail(text: str, tail: str, stops: tuple[str, ...]) -> str:
    """A rendered turn up to where the model stops (the plain answer's tail, a stop word)."""
    shared = _atom_suffix(text, tail)
    if shared.strip():
        text = text[: len(text) - len(shared)]
    last = text.rfind("probe-")  # the last argument value written
    hits = [i for w in stops if w and (i := text.find(w, max(last, 0))) >= 0]
    return text[: min(hits)] if hits else text


def _json_format(one: str, two: str | None, label: str) -> DerivedFormat | None:
    """Classify a turn written with JSON (``None`` if the arguments are not JSON)."""
    nested = PROBE_ARGS["opts"]
    values = [v for v in _json_values(one) if v[2] != nested]
    for start, end, value in values:
        keys = _call_keys(value, PROBE_NAME, PROBE_ARGS)
        listed = (
            isinstance(value, list)
            and len(value) == 1
            and (keys := _call_keys(value[0], PROBE_NAME, PROBE_ARGS)) is not None
        )
        if keys is None and not listed:
            continue
        assert keys is not None
        begin, end_marker = one[:start].strip(), one[end:].strip()
        encoding = "json_list" if listed else "json_call"
        if not begin:
            if listed:
                raise _Unclassified(f"a JSON list of calls with no marker before it: {one!r}")
            return DerivedFormat(label, "bare_json_call", name_key=keys[0], args_key=keys[1])
        sep = ""
        if two is not None and not listed:
            later = [v for v in _json_values(two) if _call_keys(v[2], PROBE_NAME_2, PROBE_ARGS_2)]
            first = [v for v in _json_values(two) if _call_keys(v[2], PROBE_NAME, PROBE_ARGS)]
            if later and first:
                between = two[first[0][1] : later[0][0]].strip()
                if between in (",", ";"):
                    sep = between
        return DerivedFormat(
            label, encoding, call_begin=begin, call_end=end_marker, separator=sep,
            name_key=keys[0], args_key=keys[1],
        )  # fmt: skip
    for start, end, value in values:
        if _is_args(value, PROBE_ARGS) and not isinstance(value, str):
            return _named_format(one, two, start, end, label)
    if values:
        shown = ", ".join(one[s:e][:80] for s, e, _ in values[:2])
        raise _Unclassified(f"JSON that is neither a call object nor the arguments: {shown}")
    return None


def _named_format(one: str, two: str | None, start: int, end: int, label: str) -> DerivedFormat:
    """``…NAME<sep>{args}…``: the name outside the JSON arguments."""
    at = one.rfind(PROBE_NAME, 0, start)
    if at < 0:
        raise _Unclassified(f"JSON arguments without the tool name before them: {one!r}")
    head, sep, tail = one[:at], one[at + len(PROBE_NAME) : start], one[end:]
    if not head.strip():
        raise _Unclassified(f"no marker before the tool name: {one!r}")
    name_open = ""
    if _call_id(0) in head:  # <call>ID<name_open>NAME…: the id is skipped
        head, name_open = head.split(_call_id(0), 1)
        if not name_open.strip():
            raise _Unclassified(f"no marker between the call id and the tool name: {one!r}")
    id_end = ""
    if _call_id(0) in sep:  # NAME<sep>ID<id_end>{args}: the id is skipped
        sep, id_end = sep.split(_call_id(0), 1)
    call_begin, call_end, calls_begin, calls_end, separator = head, tail, "", "", ""
    if two is not None:
        later = [v for v in _json_values(two) if _is_args(v[2], PROBE_ARGS_2)]
        at2 = two.rfind(PROBE_NAME_2, 0, later[0][0]) if later else -1
        if at2 > end and two[:end] == one[:end]:
            sep2 = two[at2 + len(PROBE_NAME_2) : later[0][0]].replace(_call_id(1), "", 1)
            sep = sep + id_end if id_end else sep
            indexed = _index_split(sep, sep2) if sep2 != sep and not id_end else None
            if indexed is not None:  # NAME<sep>INDEX<id_end>{args} (Kimi's functions.NAME:0)
                sep, id_end = indexed
            elif sep2 != sep:
                raise _Unclassified(
                    f"the text between name and arguments differs between calls ({sep!r}, {sep2!r})"
                )
            elif id_end:
                sep = sep[: len(sep) - len(id_end)]
            middle = two[end:at2]
            if name_open:
                middle = middle.removesuffix(_call_id(1) + name_open)
            call_end = _atom_prefix(tail, middle)
            rest = middle[len(call_end) :]
            call_begin = _atom_suffix(head, rest)
            if not call_begin.strip():
                raise _Unclassified(f"no marker before each call (between two calls: {middle!r})")
            calls_begin = head[: len(head) - len(call_begin)]
            calls_end = tail[len(call_end) :]
            separator = rest[: len(rest) - len(call_begin)]
    return DerivedFormat(
        label, "json_arguments",
        calls_begin=calls_begin.strip(), calls_end=calls_end.strip(),
        call_begin=call_begin.strip(), call_end=call_end.strip(),
        name_sep=sep.strip() if sep.strip() else sep, separator=separator.strip(),
        id_end=id_end.strip(), name_open=name_open.strip(),
    )  # fmt: skip


def _xml_format(one: str, label: str) -> DerivedFormat | None:
    """``…NAME…<k>text<sep>probe-alpha<close><k>count<sep>42…`` — XML-style parameters."""
    at = one.find(PROBE_NAME)
    v1 = one.find(str(PROBE_ARGS["text"]), at)
    v2 = one.find(str(PROBE_ARGS["count"]), v1)
    if min(at, v1, v2) < 0:
        return None
    k1, k2 = one.rfind("text", at, v1), one.rfind("count", v1, v2)
    if k1 < 0 or k2 < 0:
        return None
    after_name = one[at + len(PROBE_NAME) : k1]
    between = one[v1 + len(str(PROBE_ARGS["text"])) : k2]
    key_open = _atom_suffix(after_name, between)
    value_close = between[: len(between) - len(key_open)].strip()
    key_open = key_open.strip()
    name_sep = after_name.rstrip()
    name_sep = (
        name_sep[: len(name_sep) - len(key_open)].strip()
        if name_sep.endswith(key_open)
        else name_sep
    )
    sep = [a for a in _atoms(one[k1 + len("text") : v1]) if not a.isspace()]
    call_begin = one[:at].strip()
    last = one.rfind(value_close) if value_close else -1
    call_end = one[last + len(value_close) :].strip() if last >= 0 else ""
    if not key_open or not value_close or not call_begin:
        return None
    key_close = sep[0] if len(sep) == 2 else "".join(sep)
    value_open = sep[1] if len(sep) == 2 else ""
    pairs = DerivedFormat(
        label, None,
        key_open=key_open, key_close=key_close, value_open=value_open, value_close=value_close,
    )  # fmt: skip
    if (
        call_begin.endswith("<function=")
        and name_sep == ">"
        and (key_open, key_close, value_close) == ("<parameter=", ">", "</parameter>")
        and call_end.startswith("</function>")
    ):
        return replace(
            pairs, encoding="xml_function",
            call_begin=call_begin.removesuffix("<function=").strip(),
            call_end=call_end.removeprefix("</function>").strip(),
        )  # fmt: skip
    if not name_sep and value_open and _TAG.fullmatch(key_close) and call_end:
        return replace(pairs, encoding="xml_pairs", call_begin=call_begin, call_end=call_end)
    raise _Unclassified(
        f"XML-style parameters written {key_open + 'KEY' + key_close + value_open + 'VALUE' + value_close!r}"
        f" after {call_begin + 'NAME' + name_sep!r}, a spelling no parser machine reads"
    )


def _pythonic_format(one: str, label: str) -> DerivedFormat | None:
    """``[NAME(text='probe-alpha', count=42, …)]`` — Python call syntax."""
    m = re.search(re.escape(PROBE_NAME) + r"\(\s*text\s*=", one)
    if m is None:
        return None
    begin = one[: m.start()].strip().removesuffix("[").rstrip()
    end = one[one.rfind(")") + 1 :].strip().removeprefix("]").lstrip()
    return DerivedFormat(label, "pythonic", call_begin=begin, call_end=end)


_EMPTY_BLOCK = re.compile(r"\s*(<[^<>\s/]{1,80}>)\s*(</[^<>\s]{1,80}>)\s*")
_INDEXED = re.compile(r"(\D*?)(\d+)(\D.*)", re.S)


def _index_split(sep: str, sep2: str) -> tuple[str, str] | None:
    """``(before, after)`` when two calls' separators differ only by a call index
    (``:0<|arg|>`` / ``:1<|arg|>``); the index is then skipped like a call id."""
    m, m2 = _INDEXED.fullmatch(sep), _INDEXED.fullmatch(sep2)
    if m is None or m2 is None or (m.group(1), m.group(3)) != (m2.group(1), m2.group(3)):
        return None
    if not m.group(1).strip() or not m.group(3).strip():
        return None
    return m.group(1), m.group(3)


def _reasoning(turns: Mapping[str, str], prompt_tail: str) -> tuple[tuple[str, str] | None, str]:
    """The reasoning block's markers, and a note when a form was seen but not derived."""
    text = turns.get("reasoning")
    if text is None or PROBE_REASONING not in text or PROBE_CONTENT not in text:
        if prompt_tail.endswith("<think>"):
            return ("<think>", "</think>"), ""
        # an empty block written before every answer (``<think></think>``): its tags
        content = turns.get("content", "")
        empty = _EMPTY_BLOCK.fullmatch(content[: max(content.find(PROBE_CONTENT), 0)])
        if empty is not None and _opener_of(empty.group(2)) == empty.group(1):
            return (empty.group(1), empty.group(2)), ""
        return None, ""
    at = text.index(PROBE_REASONING)
    before = text[:at].rstrip()
    after = text[at + len(PROBE_REASONING) : text.index(PROBE_CONTENT)].strip()
    close = after
    opener = _atoms(before)[-1] if before else ""
    if not opener or not _TAG.fullmatch(opener):
        opener = _opener_of(close)  # opened by the generation prompt
    if not (_TAG.fullmatch(close) and opener):
        return None, f"reasoning is rendered as {before[-40:] + PROBE_REASONING + after!r}"
    return (opener, close), ""


def _opener_of(close: str) -> str:
    if close.startswith("</"):
        return "<" + close[2:]
    if close.startswith("[/"):
        return "[" + close[2:]
    return ""


def _classify(
    tpl: Any,
    opts: Mapping[str, Any],
    label: str,
    turns: Mapping[str, str],
    errors: Mapping[str, str],
) -> DerivedFormat:
    notes: list[str] = []
    try:
        prompt = tpl.render(_USER, add_generation_prompt=True, **opts)
    except ChatFmtError:
        prompt = ""
    reasoning, note = _reasoning(turns, prompt.rstrip())
    if note:
        notes.append(note)
    content = turns.get("content", "")
    at = content.find(PROBE_CONTENT)
    head, tail = (content[:at], content[at + len(PROBE_CONTENT) :]) if at >= 0 else ("", "")
    stops = tuple(tpl.generation_config.stop_words)
    one = turns.get("one")
    if one is None or PROBE_NAME not in one:
        why = errors.get("one") or "the template does not write the call"
        notes.append(f"no tool calls rendered ({why})")
        return DerivedFormat(label, None, reasoning=reasoning, notes=tuple(notes))
    one = _strip_turn(one, head, tail, stops)
    two = turns.get("two")
    if two is not None and PROBE_NAME_2 in two:
        two = _strip_turn(two, head, tail, stops)
    else:
        notes.append("only one call per turn is rendered")
        two = None
    try:
        fmt = _json_format(one, two, label)
    except _Unclassified as exc:
        raise ParseError(f"cannot derive a tool-call parser from template {label}: {exc}") from None
    if fmt is None:
        try:
            fmt = _xml_format(one, label) or _pythonic_format(one, label)
        except _Unclassified as exc:
            raise ParseError(
                f"cannot derive a tool-call parser from template {label}: {exc}"
            ) from None
    if fmt is None:
        raise ParseError(
            f"cannot derive a tool-call parser from template {label}: the calls are rendered as "
            f"{one.strip()[:300]!r}, which is not a form chatfmt can derive (JSON call objects, "
            "JSON lists, name + JSON arguments)"
        )
    return replace(fmt, reasoning=reasoning, notes=(*fmt.notes, *notes))
