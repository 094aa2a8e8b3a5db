"""Control text → special ids, and whether a tokenizer fits a template at all.

A template's control tokens (``<|im_start|>``, ``<|eot_id|>`` …) must each be one
special id of the tokenizer. With another model's tokenizer they silently become
ordinary text (``<|begin_of_text|>`` → six tokens in Qwen3), so the pair is checked:
every string the template declares in ``control_tokens`` that is shaped like a special
token (minus its ``text_control_tokens``, which its own model encodes as text) and
that the template writes must encode to exactly one special id.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import ChatFmtError, TokenizationError
from ..segments import Kind
from ..template import Template
from .tokenizer import Tokenizer

_SPLIT_CACHE_LIMIT = 4096
_FIT_CACHE_LIMIT = 256

#: Shapes of special-token strings: ``<|…|>``, ``<｜…｜>``, ``<word>``/``</word>``, ``[WORD]``/``[/WORD]``.
TOKEN_SHAPE = re.compile(
    r"<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</?[A-Za-z_][\w.▁-]{0,40}>|\[/?[A-Za-z][A-Za-z_]{1,30}\]"
)

_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
#: (messages, tools, add_generation_prompt): plain chat, a prompt, a tool round trip.
_PROBES: tuple[tuple[list[dict[str, Any]], list[dict[str, Any]] | None, bool], ...] = (
    (
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "U"},
            {"role": "assistant", "content": "A"},
        ],
        None,
        False,
    ),
    ([{"role": "user", "content": "U"}], None, True),
    (
        [
            {"role": "user", "content": "U"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call0",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "x"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call0", "content": "R"},
            {"role": "assistant", "content": "A"},
        ],
        [_TOOL],
        False,
    ),
)


def split_control(tok: Tokenizer, text: str) -> list[tuple[int, int, int]]:
    """(special id or -1, start, end) pieces of a control text, cached per tokenizer."""
    cache: dict[str, list[tuple[int, int, int]]] = tok.__dict__.setdefault(
        "_chatfmt_split_cache", {}
    )
    found = cache.get(text)
    if found is not None:
        return found
    pieces: list[tuple[int, int, int]] = []
    pattern = tok.special_pattern
    pos = 0
    if pattern is not None:
        for m in pattern.finditer(text):
            if m.start() > pos:
                pieces.append((-1, pos, m.start()))
            pieces.append((tok.special_id_of(m.group()), m.start(), m.end()))
            pos = m.end()
    if pos < len(text):
        pieces.append((-1, pos, len(text)))
    if len(cache) < _SPLIT_CACHE_LIMIT:
        cache[text] = pieces
    return pieces


@lru_cache(maxsize=64)
def pattern_of(strings: frozenset[str]) -> re.Pattern[str] | None:
    """One alternation of ``strings``, longest first (cached by value, bounded)."""
    if not strings:
        return None
    return re.compile("|".join(re.escape(s) for s in sorted(strings, key=lambda s: (-len(s), s))))


def required_tokens(template: Template) -> tuple[str, ...]:
    """The template's control strings that must each be one special id of its tokenizer.

    For a Jinja-backed template only the tokens its tokenizer config named (BOS, EOS,
    additional special tokens) count: token-like literals of a Jinja source are guesses.
    """
    from ..jinja.template import JinjaTemplate

    declared: Sequence[str] = template.control_tokens
    if isinstance(template, JinjaTemplate):
        declared = _config_tokens(template.variables)
    plain = set(template.text_control_tokens)
    return tuple(
        t
        for t in dict.fromkeys(declared)
        if isinstance(t, str) and t not in plain and TOKEN_SHAPE.fullmatch(t)
    )


def _config_tokens(variables: Mapping[str, Any]) -> list[str]:
    found = [variables.get(k) for k in ("bos_token", "eos_token", "unk_token", "pad_token")]
    extra = variables.get("additional_special_tokens")
    found.extend(extra if isinstance(extra, (list, tuple)) else ())
    return [t for t in found if isinstance(t, str) and t]


@dataclass(frozen=True)
class Fit:
    """How a tokenizer fits a template.

    ``missing``: required tokens the tokenizer does not encode as one special id;
    ``pattern`` finds them in control text (``None`` when nothing is missing);
    ``written``: those the template wrote in its probe renders.
    """

    missing: tuple[str, ...]
    pattern: re.Pattern[str] | None
    written: tuple[str, ...]


def fit(template: Template, tok: Tokenizer) -> Fit:
    """The :class:`Fit` of the pair, computed once per (template, tokenizer).

    Cached on the tokenizer by ``id`` with a weak reference to the template, so a dropped
    template is not kept alive, and a new one that reuses its ``id`` is not mistaken for it.
    """
    cache: dict[int, tuple[weakref.ref[Template], Fit]] = tok.__dict__.setdefault(
        "_chatfmt_fit_cache", {}
    )
    hit = cache.get(id(template))
    if hit is not None and hit[0]() is template:
        return hit[1]
    found = _fit(template, tok)
    try:
        ref = weakref.ref(template)
    except TypeError:  # not weakly referenceable (a subclass with __slots__): no cache
        return found
    if len(cache) >= _FIT_CACHE_LIMIT:  # drop the entries of templates that are gone
        for key in [k for k, (r, _) in cache.items() if r() is None]:
            del cache[key]
    cache[id(template)] = (ref, found)
    return found


def _fit(template: Template, tok: Tokenizer) -> Fit:
    missing = tuple(t for t in required_tokens(template) if not _one_special(tok, t))
    pattern = pattern_of(frozenset(missing))
    written: tuple[str, ...] = ()
    if pattern is not None:
        seen = [m.group() for text in _probe_control_text(template) for m in pattern.finditer(text)]
        written = tuple(dict.fromkeys(seen))
    return Fit(missing, pattern, written)


def mismatch_error(template: Template, tok: Tokenizer, token: str) -> TokenizationError:
    """The error for a control token ``tok`` has no single special id for."""
    ((ids, _),) = tok.encode_runs([token])
    return TokenizationError(
        f"tokenizer {tok.name!r} does not match template {template.name!r}: the template "
        f"writes the control token {token!r}, which this tokenizer encodes as {len(ids)} "
        "ordinary tokens, not one special token: use the model's own tokenizer (or, in "
        "Python, on_mismatch='text' to encode it as text on purpose)"
    )


def check_tokenizer(template: Any, tokenizer: Any) -> None:
    """Raise :class:`TokenizationError` if ``tokenizer`` does not match ``template``.

    Every control token the template writes (found by rendering a chat, a prompt and a
    tool round trip) must encode to exactly one special id; cached per pair.
    :func:`chatfmt.tokens.encode` does this itself, and also checks each conversation
    for control tokens only some inputs produce.
    """
    from ..api import get_template
    from .tokenizer import load_tokenizer

    tpl, tok = get_template(template), load_tokenizer(tokenizer)
    found = fit(tpl, tok)
    if found.written:
        raise mismatch_error(tpl, tok, found.written[0])


def _one_special(tok: Tokenizer, token: str) -> bool:
    pieces = split_control(tok, token)
    return len(pieces) == 1 and pieces[0][0] >= 0


def _probe_control_text(template: Template) -> Sequence[str]:
    texts: list[str] = []
    for messages, tools, prompt in _PROBES:
        try:
            segs = template.segments(messages, tools=tools, add_generation_prompt=prompt)
        except ChatFmtError:  # a template that refuses a probe shape is checked by the others
            continue
        texts.extend(s.text for s in segs if s.kind is Kind.CONTROL)
    return texts
