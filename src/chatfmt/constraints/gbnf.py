"""GBNF building blocks: literals, "text up to a marker" rules, the JSON-schema converter and
the check every grammar passes before it is returned.

The JSON-schema part is llama.cpp's own converter (``llama_cpp.llama_grammar.SchemaConverter``,
shipped with llama-cpp-python, the ``embedded`` extra); every finished grammar is parsed by
llguidance (``gbnf_to_lark``, then ``LLMatcher.validate_grammar``) because llama.cpp does not
parse a grammar before it uses it and an invalid one crashes the process.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import ChatFmtError, ValidationError

#: Whitespace between markers (bounded: a constrained small model pads with blank lines; 8
#: lets Jamba's template's "[\n    {" indentation through).
WS_RULE = "ws ::= [ \\t\\n]{0,8}"
#: Whitespace inside pretty-printed JSON: none, a space, or a line break and an indent, for a
#: template that writes its calls' JSON indented (``json.dumps(indent=4)``: Command R).
#: llama.cpp's own converter bounds it the same way; llama-cpp-python's allows one space only,
#: which is kept for every other template (a small model pads JSON with blank lines when it
#: may).
JSON_SPACE = '( " " | "\\n"{1,2} [ \\t]{0,20} )?'


def jws_rule(pretty: bool) -> str:
    """The ``jws`` rule: whitespace between the parts of a JSON call object."""
    return f"jws ::= {JSON_SPACE}" if pretty else "jws ::= [ \\t\\n]{0,4}"


def lit(text: str) -> str:
    """``text`` as a GBNF string literal (``""`` for empty text, which GBNF also reads)."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def seq(*parts: str) -> str:
    """GBNF parts in sequence, empty literals dropped."""
    kept = [p for p in parts if p and p != '""']
    return " ".join(kept) if kept else '""'


def _class_char(ch: str) -> str:
    if ch in "\\]^-[":
        return "\\" + ch
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, ch)


def until_rules(name: str, stop: str) -> list[str]:
    """Rules ``name`` = any text that does not contain ``stop`` (a KMP automaton, one rule per
    matched prefix of ``stop``); follow it with ``lit(stop)`` to read "text up to ``stop``"."""
    if not stop:
        raise ValueError("until_rules needs a non-empty stop text")
    n = len(stop)
    fail = [0] * n  # KMP failure function
    k = 0
    for i in range(1, n):
        while k and stop[i] != stop[k]:
            k = fail[k - 1]
        if stop[i] == stop[k]:
            k += 1
        fail[i] = k

    def step(state: int, ch: str) -> int:
        while state and stop[state] != ch:
            state = fail[state - 1]
        return state + 1 if stop[state] == ch else 0

    chars = sorted(set(stop))

    def rule(state: int) -> str:
        return f"{name}-{state}" if state else name

    # One alternative per target state, its characters as one class (few alternatives keep
    # llama.cpp's grammar sampler fast: it expands every alternative at every character).
    rules = []
    for state in range(n):
        targets: dict[int, list[str]] = {}
        for ch in chars:
            targets.setdefault(step(state, ch), []).append(ch)
        alts = []
        for target, group in sorted(targets.items()):
            if target == n:
                continue  # would complete the stop text
            if target == 0:  # every other character goes back to the start too
                alts.append(f"[^{''.join(_class_char(c) for c in chars if c not in group)}] {name}")
            else:
                alts.append(f"[{''.join(_class_char(c) for c in group)}] {rule(target)}")
        if 0 not in targets:
            alts.insert(0, f"[^{''.join(_class_char(c) for c in chars)}] {name}")
        rules.append(f"{rule(state)} ::= ( {' | '.join(alts)} )?")
    return rules


class SchemaRules:
    """llama.cpp's JSON-schema converter, shared by the schemas of one grammar (common rules
    such as ``string`` are written once); ``pretty``: JSON may be indented (:data:`JSON_SPACE`)."""

    def __init__(self, *, pretty: bool = False) -> None:
        self._pretty = pretty
        try:
            from llama_cpp.llama_grammar import SchemaConverter
        except ImportError:  # pragma: no cover - depends on the install
            raise ChatFmtError(
                "grammars for constrained decoding use llama.cpp's JSON-schema converter: "
                "install chatfmt[embedded] (llama-cpp-python)"
            ) from None
        self._conv = SchemaConverter(
            prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
        )

    def rule(self, schema: Any, name: str, field: str) -> str:
        """The rule name matching JSON valid against ``schema`` (added as ``name`` or a shared
        primitive rule); a schema the converter cannot read raises :class:`ValidationError`
        naming ``field``."""
        try:
            resolved = self._conv.resolve_refs(json.loads(json.dumps(schema)), name)
            found: str = self._conv.visit(resolved, name)
        except Exception as exc:  # the converter raises plain exceptions on what it cannot read
            raise ValidationError(
                f"cannot build a grammar from this schema: {exc}", field=field
            ) from None
        return found

    def rules(self) -> str:
        """The rules added so far, as GBNF."""
        text: str = self._conv.format_grammar()
        if self._pretty:
            text = _SPACE.sub(lambda _: f"space ::= {JSON_SPACE}", text)
        return _OPTIONAL_CHAIN.sub(_as_repetition, text)


#: ``(X (X (X (X)?)?)?)?`` or ``(X (X X?)?)?``: how llama-cpp-python's converter writes "up to n more X" (string
#: ``maxLength``, pattern ``{m,n}``). Nested n deep, it is past llguidance's nesting limit from
#: n ≈ 20, so the check would refuse a valid grammar; GBNF's ``X{0,n}`` (llama.cpp, llguidance,
#: xgrammar) says the same flat.
_OPTIONAL_CHAIN = re.compile(
    r"\((?P<item>[A-Za-z][A-Za-z0-9-]*|\[(?:[^\]\\]|\\.)*\]) (?P<more>(?:\((?P=item) )*)"
    r"(?:(?P=item)|\((?P=item)\))\?(?P<close>(?:\)\?)+)"
)


def _as_repetition(found: re.Match[str]) -> str:
    opened = 1 + found["more"].count(f"({found['item']} ")
    closed = found["close"].count(")")
    if closed != opened:  # not one whole chain: leave it as written
        return found[0]
    return f"{found['item']}{{0,{opened + 1}}}"


#: The converter's whitespace rule (one optional space).
_SPACE = re.compile(r'^space ::= " "\?$', re.MULTILINE)

_LITERALS = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]')
_NAMES = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


def prune(gbnf: str) -> str:
    """``gbnf`` with only the rules ``root`` reaches (one rule per line, as written here and
    by llama.cpp's converter), so llama.cpp and the check read no unused rules."""
    bodies: dict[str, str] = {}
    order: list[str] = []
    for line in gbnf.splitlines():
        name, sep, body = line.partition(" ::= ")
        if sep:
            bodies[name.strip()] = body
            order.append(name.strip())
    seen = {"root"}
    todo = ["root"]
    while todo:
        body = _LITERALS.sub(" ", bodies.get(todo.pop(), ""))
        for ref in _NAMES.findall(body):
            if ref in bodies and ref not in seen:
                seen.add(ref)
                todo.append(ref)
    return "".join(f"{n} ::= {bodies[n]}\n" for n in order if n in seen)


def check_gbnf(gbnf: str) -> None:
    """Raise :class:`ChatFmtError` unless ``gbnf`` parses (llguidance reads it as llama.cpp would)."""
    try:
        from llguidance import LLMatcher
        from llguidance.gbnf_to_lark import gbnf_to_lark
    except ImportError:  # pragma: no cover - depends on the install
        raise ChatFmtError(
            "checking grammars needs llguidance: install chatfmt[agent] (or pip install llguidance)"
        ) from None
    try:
        lark = gbnf_to_lark(gbnf)
    except Exception as exc:
        raise ChatFmtError(
            f"internal error: the constraint grammar does not parse: {exc}"
        ) from None
    error = LLMatcher.validate_grammar(LLMatcher.grammar_from_lark(lark))
    if error:
        raise ChatFmtError(f"internal error: the constraint grammar is invalid: {error}")


_BYTE_TOKENIZER: Any = None


def _byte_tokenizer() -> Any:
    global _BYTE_TOKENIZER
    if _BYTE_TOKENIZER is None:
        from llguidance import LLTokenizer, TokenizerWrapper

        class _Bytes:
            def __init__(self) -> None:
                self.eos_token_id = 256
                self.bos_token_id = None
                self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
                self.special_token_ids = [256]

            def __call__(self, text: bytes) -> list[int]:
                return list(text)

        _BYTE_TOKENIZER = LLTokenizer(TokenizerWrapper(_Bytes()))
    return _BYTE_TOKENIZER


#: A Lark string literal, a regular expression, or a name.
_LARK_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|/(?:[^/\\]|\\.)*/|[A-Za-z_][A-Za-z0-9_]*')


def _terminals_as_rules(lark: str) -> str:
    """``lark`` with its terminals (``NAME: …``, what ``gbnf_to_lark`` makes of a rule with
    no rule inside) written as rules: a terminal is one greedy lexeme that llguidance does
    not end early, so an optional tail it could still read (an optional parameter) would
    hide what follows it; as a rule, each of its parts is read on its own."""
    names = set(re.findall(r"^([A-Z][A-Z0-9_]*):", lark, flags=re.MULTILINE))

    def rename(found: re.Match[str]) -> str:
        word = found[0]
        return f"r_{word.lower()}" if word in names else word

    return _LARK_TOKENS.sub(rename, lark)


def gbnf_accepts(gbnf: str, text: str) -> bool:
    """Whether the complete ``text`` is a sentence of ``gbnf`` (checked with llguidance over a
    byte-level tokenizer: no model needed).

    llguidance lexes the regular parts of a grammar greedily where llama.cpp keeps every
    reading, so a text whose free part ends in a prefix of the marker that follows it (``a<t``
    before ``<tool_call>``) is rejected here and accepted by llama.cpp; the check is exact for
    the calls themselves."""
    from llguidance import LLMatcher
    from llguidance.gbnf_to_lark import gbnf_to_lark

    lark = _terminals_as_rules(gbnf_to_lark(gbnf))
    matcher = LLMatcher(_byte_tokenizer(), LLMatcher.grammar_from_lark(lark), log_level=0)
    ok = matcher.consume_tokens(list(text.encode("utf-8")))
    return bool(ok) and not matcher.is_error() and matcher.is_accepting()
