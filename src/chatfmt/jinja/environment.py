"""The sandboxed Jinja environment chat templates run in (Hugging Face compatible).

Same behaviour as transformers' chat-template environment: ``trim_blocks`` and
``lstrip_blocks``, ``loopcontrols``, the ``{% generation %}`` tag, ``tojson``
without ASCII escaping (with ``indent``, ``separators``, ``sort_keys``),
``raise_exception`` and ``strftime_now``. Like ``ImmutableSandboxedEnvironment``
it blocks Python internals (underscore attributes, unsafe callables) and
mutation of the caller's data; unlike it, a template may mutate the lists,
dicts and sets it creates itself (``list.append``, ``dict.update``), which
several official templates need.

Per-render state (the date, the caller's containers, sentinel mode) lives in a
:class:`RenderState` held in a context variable, so one compiled template is
shared by every render.
"""

from __future__ import annotations

import contextvars
import datetime as _dt
import inspect
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.ext
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from ..errors import TemplateError, TemplateRenderError

#: Markers written around ``{% generation %}`` bodies in sentinel renders.
GEN_OPEN = "\U000f1a10"
GEN_CLOSE = "\U000f1a11"


class TemplateRaised(Exception):
    """``raise_exception(...)`` was called by the template (a deliberate rejection)."""

    def __init__(self, message: str, index: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.index = index


@dataclass
class RenderState:
    """What one render needs to know besides the template variables."""

    now: _dt.datetime
    #: the caller's data (messages, tools): no container inside is mutable by the template.
    inputs: tuple[Any, ...] = ()
    #: the message dicts of this render, to find the message index of an error.
    messages: tuple[Any, ...] = ()
    #: tojson hook used by sentinel renders (``None`` for real renders).
    tojson_hook: Callable[[Any, tuple[Any, ...]], str] | None = None
    #: whether to mark ``{% generation %}`` bodies with GEN_OPEN/GEN_CLOSE.
    mark_generation: bool = False
    #: ids of the containers in ``inputs`` (collected when a template first calls a mutating method)
    input_ids: frozenset[int] | None = None

    def is_input(self, obj: Any) -> bool:
        """Whether ``obj`` is one of the caller's containers."""
        if self.input_ids is None:
            found: dict[int, Any] = {}
            collect_containers(self.inputs, None, found)
            self.input_ids = frozenset(found)
        return id(obj) in self.input_ids


def collect_containers(value: Any, owner: Any, out: dict[int, Any]) -> None:
    """Map the id of every container inside ``value`` (itself included) to ``owner``."""
    if isinstance(value, Mapping):
        out[id(value)] = owner
        for v in value.values():
            collect_containers(v, owner, out)
    elif isinstance(value, (list, tuple, set)):
        out[id(value)] = owner
        for v in value:
            collect_containers(v, owner, out)


_STATE: contextvars.ContextVar[RenderState | None] = contextvars.ContextVar(
    "chatfmt_jinja_state", default=None
)


def _state() -> RenderState | None:
    return _STATE.get()


# --------------------------------------------------------------------------- globals and filters
def message_index_from_frames(frames: list[Any], messages: tuple[Any, ...]) -> int | None:
    """Index of the message being rendered, found among the locals of Jinja frames (innermost first)."""
    if not messages:
        return None
    ids = {id(m): i for i, m in enumerate(messages)}
    for frame in frames:
        if frame.f_code.co_filename != "<template>":
            continue
        for value in list(frame.f_locals.values()):
            idx = ids.get(id(value))
            if idx is not None:
                return idx
    return None


def _raise_exception(message: Any = "") -> None:
    state = _state()
    frames = []
    frame = inspect.currentframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    index = message_index_from_frames(frames, state.messages if state else ())
    raise TemplateRaised(str(message), index)


def _strftime_now(fmt: str) -> str:
    state = _state()
    now = state.now if state else _dt.datetime.now()
    return now.strftime(str(fmt))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, jinja2.Undefined):
        if isinstance(obj, LenientUndefined):
            return None
        obj._fail_with_undefined_error()
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    if isinstance(obj, Iterator) or inspect.isgenerator(obj):
        return list(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def dump_json(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``json.dumps`` with transformers' ``tojson`` defaults (no ASCII escaping)."""
    if isinstance(indent, str) and indent.isdigit():
        indent = int(indent)
    seps = tuple(separators) if separators is not None else None
    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=seps,  # type: ignore[arg-type]
        sort_keys=sort_keys,
        default=_json_default,
    )


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    if isinstance(value, Iterator):
        value = list(value)
    state = _state()
    if state is not None and state.tojson_hook is not None:
        return state.tojson_hook(value, (ensure_ascii, indent, separators, sort_keys))
    return dump_json(value, ensure_ascii, indent, separators, sort_keys)


class _DictFactory:
    """``dict(...)`` for templates, without exposing the ``dict`` type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args)


class _Namespace(jinja2.utils.Namespace):
    """``namespace(...)`` that refuses underscore names (no route to Python internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _Namespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _Namespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"namespace attribute {name!r} is not allowed (underscore)"
            )


class GenerationExtension(jinja2.ext.Extension):
    """``{% generation %}…{% endgeneration %}``: marks text the model generates (trained spans)."""

    tags = {"generation"}  # noqa: RUF012 - Jinja reads this class attribute

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation", []), [], [], body).set_lineno(
            lineno
        )

    def _generation(self, caller: Callable[[], str]) -> str:
        text = caller()
        state = _state()
        if state is not None and state.mark_generation:
            return GEN_OPEN + text + GEN_CLOSE
        return text


class LenientUndefined(jinja2.ChainableUndefined):
    """Undefined that also concatenates as an empty string (what llama.cpp's engine does)."""

    def __add__(self, other: Any) -> Any:
        return other

    def __radd__(self, other: Any) -> Any:
        return other


#: (type, attribute) -> (safe to read, modifies a known mutable container), see ChatSandbox.
_ATTRIBUTE_RULES: dict[tuple[type, str], tuple[bool, bool]] = {}
_ATTRIBUTE_RULES_MAX = 4096


class ChatSandbox(ImmutableSandboxedEnvironment):
    """Hugging Face's chat-template sandbox, plus mutation of the template's own containers.

    Reading an unsafe attribute (``''.__class__``) fails at once instead of
    yielding an undefined value.
    """

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        raise jinja2.exceptions.SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
        )

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        # Both of Jinja's checks depend only on the object's type and the attribute name
        # (``isinstance`` tests against built-in types and ABCs): decided once per pair.
        key = (type(obj), attr)
        rule = _ATTRIBUTE_RULES.get(key)
        if rule is None:
            rule = (
                SandboxedEnvironment.is_safe_attribute(self, obj, attr, value),
                jinja2.sandbox.modifies_known_mutable(obj, attr),
            )
            if len(_ATTRIBUTE_RULES) < _ATTRIBUTE_RULES_MAX:
                _ATTRIBUTE_RULES[key] = rule
        safe, mutates = rule
        if not safe:
            return False
        if not mutates:
            return True
        state = _state()
        # Containers made by the template may change; the caller's data may not.
        return state is not None and type(obj) in (list, dict, set) and not state.is_input(obj)


def _make_env(lenient: bool) -> ChatSandbox:
    env = ChatSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[GenerationExtension, jinja2.ext.loopcontrols],
        undefined=LenientUndefined if lenient else jinja2.Undefined,
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _DictFactory()
    env.globals["namespace"] = _Namespace
    return env


_ENVS: dict[bool, ChatSandbox] = {}


def environment(lenient: bool = False) -> ChatSandbox:
    """The shared sandbox (strict, or with lenient undefined values)."""
    env = _ENVS.get(lenient)
    if env is None:
        env = _ENVS[lenient] = _make_env(lenient)
    return env


@lru_cache(maxsize=256)
def compile_template(source: str, lenient: bool = False) -> jinja2.Template:
    """Compile ``source`` once (cached by source text); syntax errors become TemplateError."""
    try:
        return environment(lenient).from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"Jinja syntax error at line {exc.lineno}: {exc.message}") from None


@lru_cache(maxsize=256)
def variables_read(source: str) -> frozenset[str]:
    """Every variable ``source`` could read from its context (``jinja2.meta`` on its syntax tree)."""
    try:
        ast = environment().parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"Jinja syntax error at line {exc.lineno}: {exc.message}") from None
    return frozenset(jinja2.meta.find_undeclared_variables(ast))


#: Characters of output a render may produce (``None``: no limit). Set by processes that
#: render untrusted templates (:mod:`chatfmt.jinja.untrusted`).
output_limit: int | None = None


def run(template: jinja2.Template, state: RenderState, variables: Mapping[str, Any]) -> str:
    """Render with ``state`` active; returns the output or raises the template's own error."""
    limit = output_limit
    token = _STATE.set(state)
    try:
        if limit is None:
            # render in one go, as Jinja's ``render`` does, without its traceback rewriting
            # (an error keeps its own frames, where the message being rendered is found)
            return "".join(template.root_render_func(template.new_context(dict(variables))))
        blocks = []
        size = 0
        for block in template.generate(**variables):
            blocks.append(block)
            size += len(block)
            if size > limit:
                raise OutputLimitError(limit)
        return "".join(blocks)
    finally:
        _STATE.reset(token)


class OutputLimitError(TemplateRenderError):
    """A render produced more output than :data:`output_limit` allows."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the template's output is over the limit of {limit:,} characters "
            "for templates from requests"
        )

    def __reduce__(self) -> Any:
        return (OutputLimitError, (self.limit,))


def render_error(exc: BaseException, messages: tuple[Any, ...]) -> TemplateRenderError:
    """Turn any failure inside a template into a TemplateRenderError (with the message index if known)."""
    if isinstance(exc, TemplateRaised):
        return TemplateRenderError(exc.message, index=exc.index)
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    index = message_index_from_frames(frames[::-1], messages)
    if isinstance(exc, jinja2.exceptions.SecurityError):
        return TemplateRenderError(
            f"the template did something the sandbox forbids: {exc}", index=index
        )
    if isinstance(exc, jinja2.TemplateError):
        return TemplateRenderError(f"template error: {exc}", index=index)
    return TemplateRenderError(f"template failed ({type(exc).__name__}: {exc})", index=index)
