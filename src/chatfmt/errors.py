"""One exception hierarchy for everything chatfmt raises on purpose."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ChatFmtError(Exception):
    """Base class of every error chatfmt raises deliberately."""


class ValidationError(ChatFmtError, ValueError):
    """Input that does not follow the message model.

    ``index`` is the message index (``None`` for conversation-wide problems or
    tools), ``field`` the offending field path such as ``"tool_calls[0].function.arguments"``.
    """

    def __init__(self, message: str, *, index: int | None = None, field: str | None = None) -> None:
        self.index = index
        self.field = field
        self.reason = message
        prefix = f"messages[{index}]" if index is not None else ""
        if field:
            prefix = f"{prefix}.{field}" if prefix else field
        super().__init__(f"{prefix}: {message}" if prefix else message)

    def __reduce__(self) -> Any:  # pickles with its index and field (e.g. from worker processes)
        return (_restore, (type(self), (self.reason,), {"index": self.index, "field": self.field}))


def _restore(cls: type[Exception], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Exception:
    return cls(*args, **kwargs)


class RoleOrderError(ValidationError):
    """A role order that the chosen template (the model's format) does not accept."""


class UnsupportedFeatureError(ValidationError):
    """The conversation uses something the template cannot express (e.g. tools, a system role)."""


class TemplateNotFoundError(ChatFmtError, LookupError):
    """A template name, model id or path that matches nothing; lists close names.

    A query that looks like a file path (a path separator at its start, several of them,
    or a template-file suffix such as ``.jinja``/``.toml``) is reported as a missing file,
    or as a file that holds no chat template, rather than as an unknown name.
    """

    def __reduce__(self) -> Any:
        return (_restore, (type(self), (self.query, self.suggestions), {}))

    def __init__(self, query: str, suggestions: Sequence[str] = ()) -> None:
        self.query = query
        self.suggestions = list(suggestions)
        problem = _path_problem(query)
        if problem is not None:
            self.suggestions = []
            super().__init__(f"template file {query!r} {problem}")
            return
        hint = f" Did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(
            f"no chat template matches {query!r}.{hint} "
            "See `chatfmt templates` for the list, or pass a template file."
        )


#: Suffixes of files ``get_template`` loads (Jinja, spec files, configs, GGUF).
TEMPLATE_FILE_SUFFIXES = (".jinja", ".j2", ".jinja2", ".json", ".toml", ".yaml", ".yml", ".gguf")


def looks_like_path(query: str) -> bool:
    """Whether a template query is meant as a file path rather than a name or model id.

    Model ids (``org/name``) have one inner slash, so a path is: a template-file suffix,
    a leading ``/``, ``./``, ``../`` or ``~``, a backslash, or two or more slashes.
    """
    text = query.strip()
    return (
        text.lower().endswith(TEMPLATE_FILE_SUFFIXES)
        or text.startswith(("/", "./", "../", "~"))
        or "\\" in text
        or text.count("/") >= 2
    )


def _path_problem(query: str) -> str | None:
    """What is wrong with a query naming a file: missing, or not a template; ``None`` for names."""
    from pathlib import Path

    path = Path(query.strip()).expanduser()
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError):  # a name too long or with NUL bytes is no file
        exists = is_dir = False
    if not exists:
        return "does not exist" if looks_like_path(query) else None
    if is_dir:
        return (
            "is a directory without a chat template (chat_template.jinja, chat_template.json "
            "or tokenizer_config.json with a chat_template)"
        )
    return (
        "is not a chat template file (expected .jinja/.j2, a .json/.toml/.yaml template spec, "
        "tokenizer_config.json, chat_template.json or .gguf)"
    )


class TemplateError(ChatFmtError):
    """A template definition (spec file or Jinja source) that cannot be used, or that failed."""


class TemplateRenderError(TemplateError):
    """A Jinja template raised (``raise_exception``) or failed while rendering."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        self.index = index
        self.reason = message
        super().__init__(f"messages[{index}]: {message}" if index is not None else message)

    def __reduce__(self) -> Any:
        return (_restore, (type(self), (self.reason,), {"index": self.index}))


class TokenizationError(ChatFmtError):
    """Tokenizer loading or encoding problems (including injection-policy violations)."""


class ParseError(ChatFmtError):
    """Model output that cannot be parsed under the chosen policy."""


class BackendError(ChatFmtError):
    """A completion backend failed: unreachable, answered with an error, or answered garbage."""


class BackendConnectionError(BackendError):
    """The backend could not be reached, or did not answer in time."""


class BackendTimeoutError(BackendConnectionError):
    """The backend was reached but sent no data within the read timeout."""


class BackendUnavailableError(BackendConnectionError):
    """No engine is available: every backend of a pool is out or failed the request."""


class BackendHTTPError(BackendError):
    """The backend answered with an HTTP error status (``status``; ``body`` is its text, cut)."""

    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        self.status = status
        self.body = body
        super().__init__(message)


class BackendProtocolError(BackendError):
    """The backend's answer is not a valid completions response."""


class InterpreterError(ChatFmtError):
    """The code interpreter's kernel could not be started (not an error of the executed code)."""
