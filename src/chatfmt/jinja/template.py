"""``JinjaTemplate``: any model's own Jinja chat template, rendered safely, with segments."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import warnings
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property
from typing import Any, ClassVar

import jinja2

from ..config import GenerationConfig
from ..errors import TemplateError, TemplateRenderError, ValidationError
from ..protocol import Conversation
from ..requests import RenderRequest
from ..segments import Segment
from ..template import PROBE_ASSISTANT, PROBE_USER, RenderContext, Template, refuse_drops
from . import environment as env
from .inputs import (
    DIALECTS,
    MARKER_CHARS,
    R_CLOSE,
    R_OPEN,
    S_CLOSE,
    S_OPEN,
    Dialect,
    Prepared,
    SentinelTable,
    View,
    build_view,
    plain,
    prepare,
    shifted,
)
from .trace import Slot, TraceError, TurnInfo, align, build_segments, search_spans, tokenize

#: The generic option that folds system messages into the next user message (llama.cpp's workaround).
MERGE_SYSTEM = "merge_system_into_first_user"
#: Variables chatfmt itself passes; options may not override them.
RESERVED = frozenset({"messages", "tools", "documents", "add_generation_prompt"})
#: Tokenizer special-token names passed to templates (as transformers does).
SPECIAL_TOKEN_NAMES = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
    "additional_special_tokens",
)
_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")
_TOKEN_LIKE = re.compile(r"<[^<>\s]+>|\[[^\[\]\s]+\]")
_LITERAL_TOKENS = re.compile(r"<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|\[/?[A-Z][A-Z_]{1,30}\]")
_SENTINEL_RE = re.compile(f"{S_OPEN}(\\d+){S_CLOSE}")
_PROBE_NOW = _dt.datetime(2024, 7, 26, 12, 0, 0)


#: Probed turn structure, shared by all instances (key: source hash, variables, options).
_TURN_INFO: dict[str, TurnInfo] = {}


class TemplateRejected(TemplateRenderError):
    """The template itself rejected the input (it called ``raise_exception``)."""


class SegmentTraceWarning(UserWarning):
    """Segments of a Jinja template were found by searching the output (the template transforms text)."""


def source_hash(source: str) -> str:
    """SHA-256 of a template source (the cache key of compiled templates)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def _template_options(ctx: RenderContext) -> tuple[dict[str, Any], bool]:
    """The variables passed to the Jinja template, and chatfmt's own system-merge option."""
    opts = dict(ctx.options)
    return opts, bool(opts.pop(MERGE_SYSTEM, False))


def _token_text(value: Any) -> Any:
    """A tokenizer-config token (string or AddedToken dict) as text."""
    if isinstance(value, Mapping):
        return value.get("content", "")
    if isinstance(value, list):
        return [_token_text(v) for v in value]
    return value


class JinjaTemplate(Template):
    """A chat template given as Jinja source, rendered in Hugging Face's sandboxed environment.

    ``variables`` are template variables from the tokenizer config (``bos_token``,
    ``eos_token``, …; AddedToken dicts are accepted); options given at render time
    override them. Any option is accepted and passed to the template, except
    ``merge_system_into_first_user`` which folds system messages into the next
    user message before rendering.
    """

    default_options: ClassVar[Mapping[str, Any]] = {MERGE_SYSTEM: False}
    #: Compile in the constructor (a source from a user); shipped templates compile on first use.
    compile_eagerly: ClassVar[bool] = True

    def __init__(
        self,
        source: str,
        *,
        name: str | None = None,
        variables: Mapping[str, Any] | None = None,
        origin: str | None = None,
    ) -> None:
        if not isinstance(source, str) or not source:
            raise TemplateError("a Jinja template source must be a non-empty string")
        self.jinja_source = source
        self.sha256 = source_hash(source)
        if self.compile_eagerly:
            self._compiled  # noqa: B018  (a syntax error is reported here, by the constructor)
        self.variables: dict[str, Any] = {
            k: plain(_token_text(v)) for k, v in (variables or {}).items()
        }
        self.origin = origin or "Jinja source"
        self.name = name or f"jinja-{self.sha256[:12]}"
        self.description = f"Jinja chat template ({self.origin})"
        self.source = f"Jinja: {self.origin}"
        self.supports_tools = "tools" in source
        self.supports_reasoning = "reasoning_content" in source or "<think>" in source
        self.uses_generation_tag = bool(_GENERATION_TAG.search(source))
        #: input shape -> index of the first dialect that rendered it, when not the first
        self._dialect_of: dict[Hashable, int] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Compiled Jinja code does not pickle: a copy (e.g. in a worker process) compiles again.
        return (_rebuild, (self.jinja_source, self.name, self.variables, self.origin))

    @cached_property
    def _compiled(self) -> jinja2.Template:
        return env.compile_template(self.jinja_source)

    # ------------------------------------------------------------------ metadata
    @cached_property
    def control_tokens(self) -> tuple[str, ...]:  # type: ignore[override]
        """Special tokens the template writes: tokenizer tokens and token-like literals of the source."""
        found: list[str] = []
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            tok = self.variables.get(key)
            if isinstance(tok, str) and tok:
                found.append(tok)
        for tok in self.variables.get("additional_special_tokens") or ():
            if isinstance(tok, str) and tok:
                found.append(tok)
        found.extend(_LITERAL_TOKENS.findall(self.jinja_source))
        return tuple(dict.fromkeys(found))

    @property
    def variables_read(self) -> frozenset[str]:
        """Every variable the source could read from its context (found in its syntax tree)."""
        return env.variables_read(self.jinja_source)

    @cached_property
    def generation_config(self) -> GenerationConfig:  # type: ignore[override]
        """Stop words: the end-of-turn marker found by probing, and the EOS token."""
        stops = list(self.turn_info({}).end_of_turn)
        return GenerationConfig(
            stop_words=tuple(dict.fromkeys(s.strip() for s in stops if s.strip()))
        )

    @cached_property
    def supports_system_role(self) -> bool:
        """Whether the template renders a system message's text (probed, as llama.cpp does)."""
        needle = "chatfmt system needle"
        try:
            out = self._render_plain(
                prepare(
                    [{"role": "system", "content": needle}, {"role": "user", "content": "hi"}], None
                ),
                {},
                True,
                _PROBE_NOW,
                False,
            )[0]
        except Exception:
            return False
        return needle in out

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Any template variable is accepted, except the ones chatfmt passes itself."""
        clash = RESERVED & set(options)
        if clash:
            raise TemplateError(
                f"option(s) {', '.join(sorted(clash))} are set by chatfmt and cannot be overridden"
            )

    def info(self) -> dict[str, Any]:
        out = super().info()
        out["jinja_sha256"] = self.sha256
        out["variables"] = {k: v for k, v in self.variables.items() if k in SPECIAL_TOKEN_NAMES}
        return out

    # ------------------------------------------------------------------ public API
    def _render(self, messages: Any, request: RenderRequest) -> str:
        """Exactly the template's output (one render; no tracing unless a partial render is asked for)."""
        if request.continue_final_message or not request.sequence_start:
            return super()._render(messages, request)
        ctx = self._context(request)
        opts, merge = _template_options(ctx)
        prepared = prepare(messages, request.tools)
        if ctx.lossless:
            refuse_drops(self.name, self._drops(prepared.conv, ctx))
        runner, prep, origin = self._history_form(prepared, ctx.strict_history)
        with _original_indices(origin):
            return runner._render_plain(
                prep, opts, request.add_generation_prompt, ctx.datetime, merge
            )[0]

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        opts, merge = _template_options(ctx)
        runner, prep, origin = self._history_form(prepare(conv, None), ctx.strict_history)
        with _original_indices(origin):
            segs = runner._trace(prep, opts, ctx.add_generation_prompt, ctx.datetime, merge)
        return _with_indices(segs, origin)

    def _history_form(
        self, prep: Prepared, strict: bool
    ) -> tuple[JinjaTemplate, Prepared, tuple[int, ...] | None]:
        """The template that renders the conversation and the conversation as it renders it:
        this template and ``prep`` itself, or (overridden by templates that write some history
        differently from the official file, unless ``strict``) another template or another
        conversation, with the original index of each of its messages."""
        return self, prep, None

    def _render_segments(
        self, messages: Any, tools: Any, ctx: RenderContext, sequence_start: bool
    ) -> tuple[Conversation, list[Segment]]:
        """Segments traced through a sentinel render (keeps custom roles and the raw shape)."""
        opts, merge = _template_options(ctx)
        prep = prepare(messages, tools, require_tool_calls=sequence_start)
        if ctx.lossless:
            refuse_drops(self.name, self._drops(prep.conv, ctx))
        if sequence_start:
            runner, form, origin = self._history_form(prep, ctx.strict_history)
            with _original_indices(origin):
                segs = runner._trace(form, opts, ctx.add_generation_prompt, ctx.datetime, merge)
            return prep.conv, _with_indices(segs, origin)
        if not prep.conv.messages:
            return prep.conv, []
        probe = [
            {"role": "user", "content": PROBE_USER},
            {"role": "assistant", "content": PROBE_ASSISTANT},
        ]
        segs = self._trace(
            shifted(prep, probe), opts, ctx.add_generation_prompt, ctx.datetime, merge
        )
        return prep.conv, self._after_probe(segs, prep.conv)

    # ------------------------------------------------------------------ rendering
    def _variables(
        self, opts: Mapping[str, Any], view: View, add_gen: bool, dialect: Dialect
    ) -> dict[str, Any]:
        out = {**self.variables, **plain(dict(opts))} if opts else dict(self.variables)
        out.update(messages=view.messages, documents=None, add_generation_prompt=add_gen)
        if view.tools is not None or not dialect.tools_undefined:
            out["tools"] = view.tools
        return out

    def _run(
        self,
        view: View,
        opts: Mapping[str, Any],
        add_gen: bool,
        when: _dt.datetime,
        dialect: Dialect,
        hook: Any = None,
    ) -> tuple[str, env.RenderState]:
        compiled = (
            env.compile_template(self.jinja_source, True) if dialect.lenient else self._compiled
        )
        state = env.RenderState(
            now=when,
            inputs=(view.messages, view.tools),
            messages=tuple(view.messages),
            tojson_hook=hook,
            mark_generation=hook is not None and self.uses_generation_tag,
        )
        return env.run(compiled, state, self._variables(opts, view, add_gen, dialect)), state

    def _render_plain(
        self,
        prep: Prepared,
        opts: Mapping[str, Any],
        add_gen: bool,
        when: _dt.datetime,
        merge: bool,
    ) -> tuple[str, Dialect]:
        """The real output, trying :data:`DIALECTS` in order; the first that renders wins.

        Which dialect renders depends on the shape of the input (:func:`input_shape`), so
        a shape that needed a later dialect starts there next time; should that fail, every
        dialect is tried in order again.
        """
        shape = input_shape(prep, add_gen, opts, merge) if self._dialect_of else None
        known = self._dialect_of.get(shape) if shape is not None else None
        if known is not None:
            dialect = DIALECTS[known]
            view = build_view(prep, dialect, merge_system=merge)
            try:
                return self._run(view, opts, add_gen, when, dialect)[0], dialect
            except (env.TemplateRaised, jinja2.exceptions.SecurityError) as exc:
                raise self._error(exc, view) from None
            except (ValidationError, TemplateError):
                raise
            except Exception:
                pass
        first: TemplateRenderError | None = None
        for k, dialect in enumerate(DIALECTS):
            view = build_view(prep, dialect, merge_system=merge)
            try:
                text = self._run(view, opts, add_gen, when, dialect)[0]
            except (env.TemplateRaised, jinja2.exceptions.SecurityError) as exc:
                raise self._error(exc, view) from None
            except (ValidationError, TemplateError):
                raise
            except Exception as exc:
                if first is None:
                    first = self._error(exc, view)
                continue
            if k:
                if len(self._dialect_of) >= _SHAPES_KEPT:
                    self._dialect_of.clear()
                self._dialect_of[shape or input_shape(prep, add_gen, opts, merge)] = k
            return text, dialect
        assert first is not None
        raise first from None

    @staticmethod
    def _error(exc: BaseException, view: View) -> TemplateRenderError:
        err = env.render_error(exc, tuple(view.messages))
        kind = TemplateRejected if isinstance(exc, env.TemplateRaised) else TemplateRenderError
        index = err.index
        reason = str(err)
        if index is not None:
            reason = reason[len(f"messages[{index}]: ") :]
            index = view.origin[index] if index < len(view.origin) else None
        return kind(reason, index=index)

    # ------------------------------------------------------------------ tracing
    def _trace(
        self,
        prep: Prepared,
        opts: Mapping[str, Any],
        add_gen: bool,
        when: _dt.datetime,
        merge: bool,
    ) -> list[Segment]:
        real, dialect = self._render_plain(prep, opts, add_gen, when, merge)
        info = self.turn_info(opts, merge)
        assistant = {m.index for m in prep.conv.messages if m.role == "assistant"}
        clean = not any(
            ch in MARKER_CHARS for ch in json.dumps([prep.raw, prep.tools], ensure_ascii=False)
        )
        reason = "its data contains chatfmt's private marker characters"
        if clean:
            for level, whole_json in ((0, True), (0, False), (1, True), (1, False)):
                try:
                    spans, gens = self._sentinel_spans(
                        prep, opts, add_gen, when, merge, dialect, level, real, whole_json
                    )
                except TraceError as exc:
                    reason = str(exc)
                    continue
                return build_segments(
                    real, spans, gens if self.uses_generation_tag else None, assistant, info
                )
        values = [
            (m.index, m.content)
            for m in prep.conv.messages
            if isinstance(m.content, str) and m.content.strip()
        ]
        try:
            spans = search_spans(real, values)
        except TraceError as exc:
            raise TemplateError(
                f"cannot find message text in the output of template {self.name!r} ({exc}; {reason}); "
                "segments (and continue_final_message / sequence_start=False) are not available for this "
                "conversation, but render() is"
            ) from None
        warnings.warn(
            f"template {self.name!r}: segments were found by searching the output ({reason})",
            SegmentTraceWarning,
            stacklevel=3,
        )
        return build_segments(real, spans, None, assistant, info)

    def _sentinel_spans(
        self,
        prep: Prepared,
        opts: Mapping[str, Any],
        add_gen: bool,
        when: _dt.datetime,
        merge: bool,
        dialect: Dialect,
        level: int,
        real: str,
        whole_json: bool = True,
    ) -> tuple[list[Any], list[tuple[int, int]]]:
        table = SentinelTable(level=level)
        view = build_view(prep, dialect, merge_system=merge, table=table)
        regions: list[Slot] = []

        def region(text: str, owner: int | None) -> str:
            regions.append(Slot(text, owner, exact_only=True))
            return f"{R_OPEN}{len(regions) - 1}{R_CLOSE}"

        def in_json(value: Any, ensure_ascii: bool) -> Any:
            # each traced string inside a JSON dump becomes its own (escaped) slot
            if isinstance(value, str):
                return _SENTINEL_RE.sub(
                    lambda m: region(
                        json.dumps(table.values[int(m.group(1))], ensure_ascii=ensure_ascii)[1:-1],
                        table.owners[int(m.group(1))],
                    ),
                    value,
                )
            if isinstance(value, Mapping):
                return {
                    in_json(k, ensure_ascii): in_json(v, ensure_ascii) for k, v in value.items()
                }
            if isinstance(value, (list, tuple)):
                return [in_json(v, ensure_ascii) for v in value]
            return value

        def hook(value: Any, args: tuple[Any, ...]) -> str:
            owners: set[int | None] = set()
            if not _find_traced(value, table, owners):
                return env.dump_json(value, *args)
            if not whole_json:
                return env.dump_json(in_json(value, bool(args[0])), *args)
            ints = {o for o in owners if o is not None}
            return region(
                env.dump_json(_substitute(value, table), *args),
                next(iter(ints)) if len(ints) == 1 else None,
            )

        try:
            sentinel_text, _ = self._run(view, opts, add_gen, when, dialect, hook)
        except Exception as exc:
            raise TraceError(
                f"the template fails on traced values ({type(exc).__name__})"
            ) from None
        fields = [Slot(v, o) for v, o in zip(table.values, table.owners)]
        items = tokenize(sentinel_text, fields, regions)
        return align(items, real)

    def turn_info(self, opts: Mapping[str, Any], merge: bool = False) -> TurnInfo:
        """Generation prompt and end-of-turn marker(s) of assistant turns (probed once per options)."""
        key = json.dumps(
            [self.sha256, sorted(self.variables.items()), sorted(opts.items()), merge], default=str
        )
        info = _TURN_INFO.get(key)
        if info is None:
            info = _TURN_INFO[key] = self._probe_turns(opts, merge)
        return info

    def _probe_turns(self, opts: Mapping[str, Any], merge: bool) -> TurnInfo:
        u, a, u2 = "Chatfmt probe question", "Chatfmt probe answer", "Chatfmt probe follow-up"

        def out(msgs: list[dict[str, str]], gen: bool) -> str | None:
            for head in ([], [{"role": "system", "content": "Chatfmt probe system"}]):
                try:
                    return self._render_plain(
                        prepare([*head, *msgs], None), opts, gen, _PROBE_NOW, merge
                    )[0]
                except Exception:
                    continue
            return None

        user = [{"role": "user", "content": u}]
        gp = ""
        with_gp, without = out(user, True), out(user, False)
        user_close = ""
        if with_gp is not None and without is not None and with_gp.startswith(without):
            gp = with_gp[len(without) :]
            if u in without:
                user_close = without[without.rindex(u) + len(u) :]
        eots: list[str] = []
        tail_out = out([*user, {"role": "assistant", "content": a}], False)
        mid_out = out(
            [*user, {"role": "assistant", "content": a}, {"role": "user", "content": u2}], False
        )
        if tail_out and mid_out and a in tail_out and a in mid_out and u2 in mid_out:
            tail = tail_out[tail_out.rindex(a) + len(a) :]
            mid_start = mid_out.rindex(a) + len(a)
            mid = mid_out[mid_start : mid_out.index(u2, mid_start)]
            common = _common_prefix(tail, mid)
            eot = _first_marker(common)
            if eot:
                eots.append(eot)
        eos = self.variables.get("eos_token")
        if isinstance(eos, str) and eos and eos not in eots:
            eots.append(eos)
        return TurnInfo(generation_prompt=gp, end_of_turn=tuple(eots), user_close=user_close)


#: Input shapes remembered per template (the memory is emptied when full).
_SHAPES_KEPT = 1024


def input_shape(prep: Prepared, add_gen: bool, opts: Mapping[str, Any], merge: bool) -> Hashable:
    """What decides whether a dialect renders an input: per message its role, keys and the
    type of each value (of text parts: their types; of tool calls: their number), whether
    there are tools, the generation prompt and the options."""
    msgs: list[Hashable] = []
    for m in prep.raw:
        content = m.get("content")
        if type(content) is str and len(m) == 2:  # {"role", "content": str}: the role says it
            msgs.append(m.get("role"))
            continue
        parts = (
            tuple(p.get("type") if isinstance(p, dict) else type(p) for p in content)
            if isinstance(content, list)
            else None
        )
        calls = m.get("tool_calls")
        msgs.append(
            (
                m.get("role"),
                tuple((k, type(v)) for k, v in m.items()),
                parts,
                len(calls) if isinstance(calls, list) else None,
            )
        )
    tools = None if prep.tools is None else len(prep.tools)
    options = repr(sorted(opts.items())) if opts else ""
    return (tuple(msgs), tools, add_gen, options, merge)


def _rebuild(source: str, name: str, variables: Mapping[str, Any], origin: str) -> JinjaTemplate:
    return JinjaTemplate(source, name=name, variables=variables, origin=origin)


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def _first_marker(common: str) -> str:
    """The end-of-turn marker at the start of the text after an assistant reply."""
    body = common.lstrip()
    lead = common[: len(common) - len(body)]
    m = _TOKEN_LIKE.match(body)
    if m:
        return lead + m.group(0)
    return (lead + body.split("\n", 1)[0]).rstrip() if body else ""


def _find_traced(value: Any, table: SentinelTable, owners: set[int | None]) -> bool:
    """Whether a dumped value holds traced strings or the caller's containers (collects owners)."""
    hit = False
    if isinstance(value, str):
        for m in _SENTINEL_RE.finditer(value):
            owners.add(table.owners[int(m.group(1))])
            hit = True
        return hit
    if isinstance(value, (dict, list)) and id(value) in table.container_owner:
        owners.add(table.container_owner[id(value)])
        hit = True
    if isinstance(value, Mapping):
        for k, v in value.items():
            hit = _find_traced(k, table, owners) | hit
            hit = _find_traced(v, table, owners) | hit
    elif isinstance(value, (list, tuple)):
        for v in value:
            hit = _find_traced(v, table, owners) | hit
    return hit


def _substitute(value: Any, table: SentinelTable) -> Any:
    """The real value behind a sentinel-marked one."""
    if isinstance(value, str):
        return (
            _SENTINEL_RE.sub(lambda m: table.values[int(m.group(1))], value)
            if S_OPEN in value
            else value
        )
    if isinstance(value, Mapping):
        return {_substitute(k, table): _substitute(v, table) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_substitute(v, table) for v in value]
    if isinstance(value, jinja2.Undefined):
        return value
    return value


def _with_indices(segs: list[Segment], origin: tuple[int, ...] | None) -> list[Segment]:
    """``segs`` with the message indices of a history form mapped back (see ``_history_form``).

    A message written as several (its text, then its calls) is one turn of the model: the
    markup between its parts (one part's end, the next one's header) is trained too.
    """
    if origin is None:
        return segs
    out = [
        s if s.message is None else Segment(s.text, s.kind, origin[s.message], s.trained)
        for s in segs
    ]
    for index in {i for k, i in enumerate(origin) if k and origin[k - 1] == i}:
        trained = [k for k, s in enumerate(out) if s.message == index and s.trained]
        for k in range(trained[0], trained[-1] + 1) if trained else ():
            s = out[k]
            if not s.trained:
                out[k] = Segment(s.text, s.kind, index, True)
    return out


@contextmanager
def _original_indices(origin: tuple[int, ...] | None) -> Iterator[None]:
    """Errors raised inside name the caller's message index, not the history form's."""
    try:
        yield
    except ValidationError as exc:
        index = exc.index
        if origin is None or index is None or not 0 <= index < len(origin):
            raise
        raise type(exc)(exc.reason, index=origin[index], field=exc.field) from None
