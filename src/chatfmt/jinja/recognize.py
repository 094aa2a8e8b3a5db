"""Recognize a Jinja source as one of chatfmt's native templates, and find where the two differ.

Candidates, in order:

* **fingerprint** — the source is exactly an official file listed in some native
  template's ``official_templates`` (files in ``chatfmt/data/templates``; only line
  endings and one trailing newline, which Jinja itself ignores, may differ);
* **probe** — every native chat template.

A candidate must agree with the source on every *core* probe (:data:`probes.CORE`) and
render at least one probe exactly as the source does in transformers' input shape. It
is then compared on every other probe, each of which uses some input shapes
(:mod:`chatfmt.jinja.shapes`); the probes where it differs are kept in
:attr:`Recognition.differs`, and a call whose shapes include all shapes of such a probe
renders through the Jinja backend (:meth:`Recognition.native_for`). A candidate found
by probing that differs where its own features are (tools, reasoning) is skipped.

Per probe, the native template *agrees* with the source when

* both render the same text; or
* the source renders (as transformers does) and loses part of the input, and the
  native template refuses the input with a chatfmt error (no silent loss); or
* transformers fails on the input (the source renders only in one of chatfmt's
  fallback input shapes, or fails by accident) and the native template renders or
  refuses it; or
* the source rejects the input with ``raise_exception`` and the native template refuses it.

When the source's ``bos_token``/``eos_token`` are not known (a bare source or ``.jinja``
file), the probes infer them: each must stand for one fixed non-empty string, BOS only
at the start and EOS only after an assistant reply or at the very end.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..errors import ChatFmtError
from ..registry import REGISTRY
from ..template import Template
from .inputs import DIALECTS, prepare
from .probes import CORE, OPTION_BASES, SHAPED, Probe, option_values
from .shapes import REASONING, TOOL_CALLS, TOOLS
from .template import MERGE_SYSTEM, SPECIAL_TOKEN_NAMES, JinjaTemplate, TemplateRejected

#: Stand-ins for unknown special tokens during probing (one private-use character each).
_UNKNOWN = {"bos_token": "\U000f1b00", "eos_token": "\U000f1b01"}
_NOW = _dt.datetime(2024, 7, 26, 12, 0, 0)


@dataclass(frozen=True)
class Recognition:
    """What a Jinja source was recognized as, and which input shapes it renders differently."""

    template: Template | None
    #: "fingerprint", "probe" or "none"
    method: str
    #: native templates that rendered every core probe like the source (the first is used)
    matches: tuple[str, ...] = ()
    #: inferred special tokens (a source without tokenizer config)
    tokens: Mapping[str, str] | None = None
    #: shape sets of the probes where the native template differs from the source
    differs: tuple[frozenset[str], ...] = ()
    #: every shape some probe used
    probed: frozenset[str] = frozenset()

    def native_for(self, shapes: frozenset[str]) -> bool:
        """Whether a call with these input shapes renders exactly as the source does."""
        if self.template is None or not shapes <= self.probed:
            return False
        return not any(d <= shapes for d in self.differs)

    def describe(self) -> str:
        """``qwen3 (fingerprint)``, with the shapes that go to the Jinja backend if any."""
        if self.template is None:
            return "jinja (not recognized)"
        text = f"{self.template.name} ({self.method})"
        if self.differs:
            where = sorted({" + ".join(sorted(d)) for d in self.differs})
            text += f"; Jinja backend for calls with: {'; '.join(where)}"
        return text


def exact_source(source: str) -> str:
    """The source as Jinja reads it: line endings unified, one trailing newline dropped."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    return text[:-1] if text.endswith("\n") else text


def fingerprint(source: str) -> str:
    """A hash of the source as Jinja reads it (sources with equal hashes render identically)."""
    return hashlib.sha256(exact_source(source).encode("utf-8")).hexdigest()


_INDEX: dict[str, Template] = {}
_INDEXED: set[tuple[str, str]] = set()


def official_source(filename: str) -> str | None:
    """The text of an official template file shipped in ``chatfmt/data/templates``."""
    try:
        return (resources.files("chatfmt") / "data" / "templates" / filename).read_text(
            encoding="utf-8"
        )
    except (FileNotFoundError, OSError, ModuleNotFoundError):
        return None


def fingerprint_index() -> dict[str, Template]:
    """Fingerprint -> native template, over every registered template's official files."""
    for tpl in REGISTRY:
        for filename in tpl.official_templates:
            key = (tpl.name, filename)
            if key in _INDEXED:
                continue
            text = official_source(filename)
            if text is None:
                continue
            _INDEXED.add(key)
            _INDEX.setdefault(fingerprint(text), tpl)
    return _INDEX


# --------------------------------------------------------------------------- outcomes
@dataclass(frozen=True)
class Outcome:
    """One render of a probe: its text, or how it failed."""

    text: str | None
    #: rendered with the input exactly as transformers passes it (the source only)
    exact: bool = True
    #: refused on purpose: ``raise_exception`` (source) or a chatfmt error (native)
    refused: bool = False


def _source_outcome(jinja: JinjaTemplate, probe: Probe) -> Outcome:
    msgs, tools = probe.arguments()
    options = dict(probe.options)
    merge = bool(options.pop(MERGE_SYSTEM, False))
    try:
        text, dialect = jinja._render_plain(
            prepare(msgs, tools), options, probe.add_generation_prompt, _NOW, merge
        )
    except TemplateRejected:
        return Outcome(None, refused=True)
    except Exception:
        return Outcome(None)
    return Outcome(text, exact=dialect == DIALECTS[0])


def _native_outcome(native: Template, probe: Probe) -> Outcome:
    msgs, tools = probe.arguments()
    try:
        text = native.render(
            msgs,
            tools=tools,
            add_generation_prompt=probe.add_generation_prompt,
            now=_NOW,
            **probe.options,
        )
    except ChatFmtError:
        return Outcome(None, refused=True)
    except Exception:
        return Outcome(None)  # a native template that crashes agrees with nothing
    return Outcome(text)


def _pattern(text: str, unknown: Mapping[str, str]) -> re.Pattern[str]:
    """Regex matching ``text`` with each unknown token replaced by one consistent string."""
    out: list[str] = []
    seen: set[str] = set()
    chars = {v: k for k, v in unknown.items()}
    for ch in re.split(f"([{''.join(unknown.values())}])", text) if unknown else [text]:
        name = chars.get(ch)
        if name is None:
            out.append(re.escape(ch))
        elif name in seen:
            out.append(f"(?P={name})")
        else:
            seen.add(name)
            out.append(f"(?P<{name}>.*?)")
    return re.compile("".join(out), re.DOTALL)


def _plausible(text: str, unknown: Mapping[str, str], probe: Probe) -> bool:
    """Unknown tokens may only stand where such tokens go.

    BOS only at the start; EOS only right after an assistant reply or at the very end.
    """
    bos, eos = unknown.get("bos_token"), unknown.get("eos_token")
    if bos and bos in text[1:]:
        return False
    if eos and eos in text:
        replies = [
            m["content"]
            for m in probe.messages
            if m["role"] == "assistant" and isinstance(m.get("content"), str) and m["content"]
        ]
        ends = {v for r in replies for v in (r, r.strip(), r.rstrip())}
        at = text.find(eos)
        while at != -1:
            if at != len(text) - 1 and not any(text.endswith(e, 0, at) for e in ends):
                return False
            at = text.find(eos, at + 1)
    return True


def _same_text(
    got: str,
    want: str,
    probe: Probe,
    unknown: Mapping[str, str],
    tokens: dict[str, str],
) -> bool:
    """Whether the source text ``got`` equals the native ``want`` (inferring unknown tokens).

    An inferred token must be a non-empty string: a native template that writes nothing
    where the source writes ``bos_token`` says nothing about the tokenizer's BOS.
    """
    for name, ch in unknown.items():
        if name in tokens:
            got = got.replace(ch, tokens[name])
    pending = {n: c for n, c in unknown.items() if n not in tokens and c in got}
    if not pending:
        return got == want
    if not _plausible(got, pending, probe):
        return False
    m = _pattern(got, pending).fullmatch(want)
    if m is None or not all(m.groupdict().values()):
        return False
    tokens.update(m.groupdict())
    return True


def _agrees(
    source: Outcome,
    native: Outcome,
    probe: Probe,
    unknown: Mapping[str, str],
    tokens: dict[str, str],
) -> str | None:
    """``"same"`` (equal texts), ``"compatible"`` (see the module doc) or ``None`` (they differ)."""
    if source.text is None:
        if source.refused:
            return "compatible" if native.refused else None
        return "compatible" if native.refused or native.text is not None else None
    if native.text is None:
        if not native.refused:
            return None
        lost = any(d not in source.text for d in probe.data())
        return "compatible" if lost or not source.exact else None
    if _same_text(source.text, native.text, probe, unknown, tokens):
        return "same"
    # transformers fails on this input; chatfmt's fallback shapes are no reference for the native
    return None if source.exact else "compatible"


# --------------------------------------------------------------------------- matching
@dataclass
class _Match:
    native: Template
    tokens: dict[str, str]
    differs: list[frozenset[str]]
    probed: set[str]
    #: probes that differ, and probes the source renders as transformers does with equal texts
    n_differ: int
    n_same: int


class _Sources:
    """The source's outcome per probe, rendered once per recognition."""

    def __init__(self, jinja: JinjaTemplate) -> None:
        self.jinja = jinja
        self._done: dict[str, Outcome] = {}

    def __getitem__(self, probe: Probe) -> Outcome:
        hit = self._done.get(probe.name)
        if hit is None:
            hit = self._done[probe.name] = _source_outcome(self.jinja, probe)
        return hit


def _option_probes(native: Template, reads: frozenset[str]) -> list[Probe]:
    """Representative probes with each option of ``native`` that the source reads, at each value."""
    out: list[Probe] = []
    for name in sorted(native.default_options):
        if (name not in reads and name != MERGE_SYSTEM) or name in SPECIAL_TOKEN_NAMES:
            continue
        for value in option_values(native.default_options[name]):
            out.extend(base.with_options({name: value}) for base in OPTION_BASES)
    return out


def _match(
    native: Template, sources: _Sources, unknown: Mapping[str, str], reads: frozenset[str]
) -> _Match | None:
    """How ``native`` compares with the source, or ``None`` if it is no candidate.

    A candidate agrees on every core probe and renders at least one probe exactly as the
    source does in transformers' own input shape.
    """
    tokens: dict[str, str] = {}
    if sources[CORE[0]].text is None:
        return None
    same = 0
    for probe in CORE:
        verdict = _agrees(sources[probe], _native_outcome(native, probe), probe, unknown, tokens)
        if verdict is None:
            return None
        same += verdict == "same" and sources[probe].exact
    differs: list[frozenset[str]] = []
    probed: set[str] = set()
    for probe in (*SHAPED, *_option_probes(native, reads)):
        probed |= probe.shapes
        verdict = _agrees(sources[probe], _native_outcome(native, probe), probe, unknown, tokens)
        if verdict is None:
            differs.append(probe.shapes)
        same += verdict == "same" and sources[probe].exact
    if not same:
        return None
    return _Match(native, tokens, _minimal(differs), probed, len(differs), same)


def _minimal(sets: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    """The sets of ``sets`` that contain no other (a call containing one contains the smaller)."""
    unique = sorted(set(sets), key=lambda s: (len(s), sorted(s)))
    return [s for i, s in enumerate(unique) if not any(o <= s for o in unique[:i])]


def _differs_in_its_features(match: _Match) -> bool:
    """Whether a native template differs where its own features are (tools, reasoning).

    Such a native template is another family that happens to share the plain chat turns
    (its parsers would read the model's output wrongly); probe recognition skips it.
    """
    features = set()
    if match.native.supports_tools:
        features |= {TOOLS, TOOL_CALLS}
    if match.native.supports_reasoning:
        features.add(REASONING)
    return any(d & features for d in match.differs)


def _candidates() -> list[Template]:
    return [
        t
        for t in REGISTRY
        if not isinstance(t, JinjaTemplate) and t.generation_config.capability == "chat"
    ]


def recognize(source: str, variables: Mapping[str, Any] | None = None) -> Recognition:
    """Recognize ``source`` (with its tokenizer-config ``variables``, if known) as a native template."""
    variables = dict(variables or {})
    key = json.dumps(
        [fingerprint(source), sorted(variables.items()), len(REGISTRY.names())], default=str
    )
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    result = _recognize(source, variables)
    _CACHE[key] = result
    return result


_CACHE: dict[str, Recognition] = {}


def _recognition(match: _Match, method: str, matches: Sequence[str]) -> Recognition:
    return Recognition(
        match.native,
        method,
        tuple(matches),
        dict(match.tokens) or None,
        tuple(match.differs),
        frozenset(match.probed),
    )


def _recognize(source: str, variables: dict[str, Any]) -> Recognition:
    known = {k: v for k, v in variables.items() if k in _UNKNOWN}
    unknown = {k: v for k, v in _UNKNOWN.items() if k not in known}
    jinja = JinjaTemplate(source, variables={**variables, **unknown})
    reads = jinja.variables_read
    sources = _Sources(jinja)
    native = fingerprint_index().get(fingerprint(source))
    if native is not None:
        match = _match(native, sources, unknown, reads)
        if match is not None:
            return _recognition(match, "fingerprint", (native.name,))
    found = [
        m
        for m in (_match(tpl, sources, unknown, reads) for tpl in _candidates())
        if m is not None and not _differs_in_its_features(m)
    ]
    if not found:
        return Recognition(None, "none")
    # The native template that differs on the fewest probes wins (then: the most equal texts;
    # then the first by name).
    best = min(found, key=lambda m: (m.n_differ, -m.n_same))
    names = [best.native.name, *(m.native.name for m in found if m is not best)]
    return _recognition(best, "probe", names)
