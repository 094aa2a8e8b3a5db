"""What ``chatfmt serve`` serves: model specs from the command line or a TOML file.

A config file maps model names to a backend, a template and an optional tokenizer::

    [models.qwen]
    backend = "http://127.0.0.1:8001/v1"   # or "embedded", or several URLs (a pool)
    template = "qwen2.5"                   # default: the server's model id / the GGUF's own
    tool_format = "hermes"                 # optional: for a template without one ("none": no pairing)
    tool_parser = "pythonic"               # optional: read tool calls with this parser instead
    tokenizer = "/models/qwen2.5"           # optional: ids for /v1/render, usage, length check
    backend_model = "Qwen/Qwen2.5-7B-Instruct"  # optional: the model name sent to the backend
    backend_api_key_env = "VLLM_API_KEY"    # optional: where the backend's key is (or backend_api_key)
    backend_kind = "vllm"                   # optional: the engine (default: detected)
    strict_history = true                   # optional: official bytes or a 400 (default false)

    [limits]
    max_body_bytes = 8388608
    max_messages = 2048
    max_prompt_tokens = 32768
    stored_responses = 1024                # previous_response_id: responses kept (per process)
    stored_response_ttl = 3600             # … and for how many seconds
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import ChatFmtError
from .models import Limits, ModelEntry

EMBEDDED = "embedded"


@dataclass(frozen=True)
class ModelSpec:
    """One served model before anything is loaded (``backend`` is a URL, several URLs — one
    model served by several engines, see :mod:`chatfmt.backends.pool` — or ``"embedded"``;
    an empty ``name`` means the template's name)."""

    name: str
    backend: str | tuple[str, ...] = EMBEDDED
    template: str | None = None
    tokenizer: str | None = None
    backend_model: str | None = None
    backend_api_key: str | None = None
    model_path: str | None = None  # a GGUF for the embedded backend
    #: a tool format for a template without one (default: the template's default pairing;
    #: "none": no pairing), see chatfmt.tool_format
    tool_format: str | None = None
    #: a tool parser that reads the output's calls instead of the template's (vLLM's
    #: --tool-call-parser), see chatfmt.with_tool_parser
    tool_parser: str | None = None
    backend_kind: str = "auto"  # the engine's dialect (see chatfmt.backends.dialects)
    #: render history as the official template does, or refuse it (docs/rendering.md)
    strict_history: bool = False

    def __post_init__(self) -> None:
        backend = self.backend
        if not isinstance(backend, str):  # a list (from TOML or JSON): a tuple, one URL: a str
            urls = tuple(backend)
            object.__setattr__(self, "backend", urls[0] if len(urls) == 1 else urls)

    @property
    def backend_urls(self) -> tuple[str, ...]:
        """The backend URLs (one for a single engine; ``("embedded",)`` for the embedded model)."""
        return (self.backend,) if isinstance(self.backend, str) else self.backend

    def __repr__(self) -> str:  # never show the backend's key
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        if shown["backend_api_key"]:
            shown["backend_api_key"] = "***"
        return f"ModelSpec({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


_MODEL_KEYS = {
    "backend",
    "template",
    "tokenizer",
    "backend_model",
    "backend_api_key",
    "backend_api_key_env",
    "model_path",
    "tool_format",
    "tool_parser",
    "backend_kind",
    "strict_history",
}
#: Keys whose value is true or false (the others are non-empty strings).
_BOOL_KEYS = {"strict_history"}


def load_config(path: Path) -> tuple[list[ModelSpec], Limits]:
    """Model specs and limits from a TOML file; errors name the file and the key."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ChatFmtError(f"{path}: cannot read the config: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ChatFmtError(f"{path}: not valid TOML: {exc}") from None
    unknown = set(data) - {"models", "limits"}
    if unknown:
        raise ChatFmtError(
            f"{path}: unknown table(s) {', '.join(sorted(unknown))} (models, limits)"
        )
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise ChatFmtError(f"{path}: no [models.NAME] table")
    specs = [_spec(path, name, table) for name, table in models.items()]
    return specs, _limits(path, data.get("limits", {}))


def _spec(path: Path, name: str, table: Any) -> ModelSpec:
    where = f"{path}: models.{name}"
    if not isinstance(table, dict):
        raise ChatFmtError(f"{where}: must be a table")
    unknown = set(table) - _MODEL_KEYS
    if unknown:
        raise ChatFmtError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(_MODEL_KEYS))})"
        )
    for key, value in table.items():
        if key == "backend" and isinstance(value, list):
            if not value or not all(isinstance(v, str) and v for v in value):
                raise ChatFmtError(f"{where}.backend: must be a URL or a non-empty list of URLs")
            if EMBEDDED in value and len(value) > 1:
                raise ChatFmtError(f"{where}.backend: a pool of backends takes URLs, not embedded")
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ChatFmtError(f"{where}.{key}: must be true or false")
        elif not isinstance(value, str) or not value:
            raise ChatFmtError(f"{where}.{key}: must be a non-empty string")
    key = table.get("backend_api_key")
    env = table.get("backend_api_key_env")
    if env is not None:
        key = os.environ.get(env)
        if not key:
            raise ChatFmtError(f"{where}.backend_api_key_env: the variable {env} is not set")
    return ModelSpec(
        name=name,
        backend=table.get("backend", EMBEDDED),
        template=table.get("template"),
        tokenizer=table.get("tokenizer"),
        backend_model=table.get("backend_model"),
        backend_api_key=key,
        model_path=table.get("model_path"),
        tool_format=table.get("tool_format"),
        tool_parser=table.get("tool_parser"),
        backend_kind=_kind(where, table.get("backend_kind", "auto")),
        strict_history=table.get("strict_history", False),
    )


def _kind(where: str, value: str) -> str:
    """A ``backend_kind`` checked (``auto`` or an engine kind)."""
    from ..backends.dialects import engine_kind

    if value != "auto":
        try:
            engine_kind(value)
        except ChatFmtError as exc:
            raise ChatFmtError(f"{where}.backend_kind: {exc}") from None
    return value


def _limits(path: Path, table: Any) -> Limits:
    if not isinstance(table, dict):
        raise ChatFmtError(f"{path}: limits must be a table")
    known = {f.name for f in fields(Limits)}
    unknown = set(table) - known
    if unknown:
        raise ChatFmtError(
            f"{path}: limits: unknown key(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(known))})"
        )
    for key, value in table.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ChatFmtError(f"{path}: limits.{key}: must be a positive integer")
    return Limits(**table)


async def build_model(spec: ModelSpec) -> ModelEntry:
    """Backend, template and tokenizer of one spec.

    The template is ``spec.template``, else the embedded model's own (its GGUF chat
    template), else the one matching the backend server's model id; paired with
    ``spec.tool_format`` (:func:`~chatfmt.tool_format.resolve_tool_format`), its calls read
    by ``spec.tool_parser`` when given (:func:`~chatfmt.tool_format.with_tool_parser`).
    """
    from ..api import get_template
    from ..backends.base import Backend
    from ..registry import REGISTRY
    from ..tool_format import resolve_tool_format, with_tool_parser

    backend: Backend
    urls = spec.backend_urls
    if EMBEDDED in urls and len(urls) > 1:
        raise ChatFmtError(f"model {spec.name!r}: a pool of backends takes URLs, not embedded")
    if spec.backend == EMBEDDED:
        from ..backends.llamacpp import LlamaCppBackend

        embedded = LlamaCppBackend(spec.model_path)
        backend = embedded
        template = get_template(spec.template or embedded.model_path)
    else:
        from ..backends.openai import OpenAICompletionsBackend
        from ..backends.pool import PoolBackend

        engines = [
            OpenAICompletionsBackend(
                url, model=spec.backend_model, api_key=spec.backend_api_key, kind=spec.backend_kind
            )
            for url in urls
        ]
        remote: OpenAICompletionsBackend | PoolBackend = (
            engines[0] if len(engines) == 1 else PoolBackend(engines)
        )
        backend = remote
        if spec.template is not None:
            template = get_template(spec.template)
        else:
            try:
                model_id = await remote.model_id()
            finally:
                await remote.aclose()  # its session belongs to this loop, not the server's
            found = REGISTRY.match_model(model_id)
            if found is None:
                raise ChatFmtError(
                    f"model {spec.name!r}: no template matches the backend's model "
                    f"{model_id!r}; give one (--template or template = ...)"
                )
            template = found
    template = resolve_tool_format(template, spec.tool_format)
    if spec.tool_parser is not None:
        try:
            template = with_tool_parser(template, spec.tool_parser)
        except ChatFmtError as exc:
            raise ChatFmtError(f"model {spec.name!r}: {exc}") from None
    tokenizer = None
    if spec.tokenizer is not None:
        from ..tokens import load_tokenizer

        tokenizer = load_tokenizer(spec.tokenizer)
    name = spec.name or _default_name(backend, template)
    return ModelEntry(name, backend, template, tokenizer, strict_history=spec.strict_history)


def _default_name(backend: Any, template: Any) -> str:
    """An unnamed model's name: the embedded model's file stem, else the template's name."""
    path = getattr(backend, "model_path", None)
    return Path(path).stem if path is not None else str(template.name)
