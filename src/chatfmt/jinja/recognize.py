"""Recognize a Jinja source as one of chatfmt's native templates.

Two ways, in order:

* **fingerprint** — the normalized source equals an official file listed in some
  native template's ``official_templates`` (files in ``chatfmt/data/templates``);
* **probe** — rendering a fixed set of conversations (plain chat, with a system
  message, multi-turn, whitespace, tools and reasoning where the native template
  supports them) gives the same text through the Jinja source and the native
  template, or both reject it. When the source's ``bos_token``/``eos_token`` are not
  known (a bare source or ``.jinja`` file), they are inferred: each must stand for
  one fixed string across all probes.

The registry is read at each call (templates registered later are seen).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..registry import REGISTRY
from ..template import Template
from .template import JinjaTemplate

#: Stand-ins for unknown special tokens during probing (one private-use character each).
_UNKNOWN = {"bos_token": "\U000f1b00", "eos_token": "\U000f1b01"}
_NOW = _dt.datetime(2024, 7, 26, 12, 0, 0)

_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}


@dataclass(frozen=True)
class Probe:
    """One probe conversation."""

    messages: tuple[Mapping[str, Any], ...]
    add_generation_prompt: bool = True
    tools: tuple[Mapping[str, Any], ...] | None = None
    needs: str = ""  # "tools" or "reasoning": only for native templates that support it


def _m(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


PROBES: tuple[Probe, ...] = (
    Probe((_m("user", "Hello"),)),
    Probe((_m("user", "Hello"),), add_generation_prompt=False),
    Probe(
        (
            _m("system", "You are a helpful assistant."),
            _m("user", "Hi there"),
            _m("assistant", "Hello! How can I help?"),
            _m("user", "What is 2+2?"),
        )
    ),
    Probe(
        (_m("user", "Hi there"), _m("assistant", "Hello! How can I help?")),
        add_generation_prompt=False,
    ),
    Probe(
        (
            _m("user", "  padded question \n"),
            _m("assistant", "\n answer with spaces  "),
            _m("user", "line one\nline two"),
            _m("assistant", "done"),
            _m("user", "again"),
        )
    ),
    Probe((_m("user", "What is the weather in Paris?"),), tools=(_WEATHER,), needs="tools"),
    Probe(
        (
            _m("user", "What is the weather in Paris?"),
            _m(
                "assistant",
                None,
                tool_calls=[
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                    }
                ],
            ),
            _m("tool", "22 degrees", tool_call_id="call_1"),
            _m("assistant", "It is 22 degrees in Paris."),
            _m("user", "Thanks"),
        ),
        tools=(_WEATHER,),
        needs="tools",
    ),
    Probe(
        (
            _m("user", "Think first"),
            _m("assistant", "The answer.", reasoning_content="Some thinking."),
            _m("user", "And now?"),
        ),
        needs="reasoning",
    ),
)


@dataclass(frozen=True)
class Recognition:
    """What a Jinja source was recognized as."""

    template: Template | None
    #: "fingerprint", "probe" or "none"
    method: str
    #: native templates that matched (the first is used)
    matches: tuple[str, ...] = ()
    #: inferred special tokens (probe recognition of a source without tokenizer config)
    tokens: Mapping[str, str] | None = None

    def describe(self) -> str:
        if self.template is None:
            return "jinja (not recognized)"
        return f"{self.template.name} ({self.method})"


def normalize(source: str) -> str:
    """The source with line endings unified and trailing/outer whitespace removed."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def fingerprint(source: str) -> str:
    """A hash of the normalized source."""
    import hashlib

    return hashlib.sha256(normalize(source).encode("utf-8")).hexdigest()


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


# --------------------------------------------------------------------------- probing
def _outcome(template: Template, probe: Probe) -> str | None:
    """The probe rendered by ``template`` (``None`` if the template rejects it)."""
    msgs = [dict(m) for m in probe.messages]
    tools = [dict(t) for t in probe.tools] if probe.tools else None
    try:
        return template.render(
            msgs, tools=tools, add_generation_prompt=probe.add_generation_prompt, now=_NOW
        )
    except Exception:
        return None


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


def _matches(
    native: Template,
    jinja: JinjaTemplate,
    unknown: Mapping[str, str],
    cache: dict[int, str | None],
    basic: bool = False,
) -> dict[str, str] | None:
    """Token assignment under which ``native`` and ``jinja`` agree on every probe (None if they differ).

    ``basic`` uses only the probes without tools and reasoning.
    """
    tokens: dict[str, str] = {}
    for k, probe in enumerate(PROBES):
        if basic and probe.needs:
            continue
        if probe.needs == "tools" and not native.supports_tools:
            continue
        if probe.needs == "reasoning" and not native.supports_reasoning:
            continue
        if k not in cache:
            cache[k] = _outcome(jinja, probe)
        got = cache[k]
        want = _outcome(native, probe)
        if got is None or want is None:
            if got is None and want is None:
                continue
            return None
        if not _plausible(got, unknown, probe):
            return None
        for name, ch in unknown.items():
            if name in tokens:
                got = got.replace(ch, tokens[name])
        pending = {n: c for n, c in unknown.items() if n not in tokens}
        m = _pattern(got, pending).fullmatch(want)
        if m is None:
            return None
        tokens.update({n: v for n, v in m.groupdict().items() if v is not None})
    return tokens


def _plausible(text: str, unknown: Mapping[str, str], probe: Probe) -> bool:
    """Unknown tokens may only stand where such tokens go: BOS at the start, EOS after an assistant reply."""
    bos, eos = unknown.get("bos_token"), unknown.get("eos_token")
    if bos and bos in text[1:]:
        return False
    if eos and eos in text:
        replies = [
            m["content"] for m in probe.messages if m["role"] == "assistant" and m.get("content")
        ]
        ends = {v for r in replies for v in (r, r.strip(), r.rstrip())}
        at = text.find(eos)
        while at != -1:
            if not any(text.endswith(e, 0, at) for e in ends):
                return False
            at = text.find(eos, at + 1)
    return True


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


def _recognize(source: str, variables: dict[str, Any]) -> Recognition:
    known = {k: v for k, v in variables.items() if k in _UNKNOWN}
    unknown = {k: v for k, v in _UNKNOWN.items() if k not in known}
    jinja = JinjaTemplate(source, variables={**variables, **unknown})
    native = fingerprint_index().get(fingerprint(source))
    cache: dict[int, str | None] = {}
    if native is not None:
        # A native template may render more than its official file (e.g. tools); the file still names it.
        tokens = _matches(native, jinja, unknown, cache)
        if tokens is None:
            tokens = _matches(native, jinja, unknown, cache, basic=True)
        if tokens is not None or not known:
            return Recognition(native, "fingerprint", (native.name,), tokens or None)
    found: list[tuple[Template, dict[str, str]]] = []
    for tpl in _candidates():
        if jinja.supports_tools and not tpl.supports_tools:
            continue
        tokens = _matches(tpl, jinja, unknown, cache)
        if tokens is not None:
            found.append((tpl, tokens))
    if not found:
        return Recognition(None, "none")
    return Recognition(found[0][0], "probe", tuple(t.name for t, _ in found), found[0][1] or None)
