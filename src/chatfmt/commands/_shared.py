"""What every ``chatfmt`` command shares: error lines instead of tracebacks, input files, options.

Error policy of the command line (the safety net in :func:`guarded`, applied to every command):

- a :class:`~chatfmt.errors.ChatFmtError` (bad input, unknown template, …) and an
  ``OSError`` (missing file, permission, full disk) print one ``error: …`` line, exit 2;
- a ``UnicodeDecodeError`` or other ``ValueError`` that escaped the input handling prints one
  line too, marked *unexpected* with the exception type, so it is reported rather than hidden;
- a closed output pipe (``chatfmt templates | head -1``) is left to click: quiet, exit code 1;
- anything else is a bug in chatfmt and keeps its traceback. ``CHATFMT_DEBUG=1`` shows the
  traceback for every error.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from ..errors import ChatFmtError
from ..textfile import decode_problem, decode_text

F = TypeVar("F", bound=Callable[..., Any])

#: Exit code of every reported error (as click's usage errors).
ERROR_EXIT = 2


def fail(message: str) -> typer.Exit:
    """Print an error for the user and return the exit to raise."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=ERROR_EXIT)


def error_line(exc: BaseException) -> str | None:
    """The one-line message for an error the command line reports itself, or ``None`` (a bug)."""
    if isinstance(exc, ChatFmtError):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"{decode_problem('input', exc)} (unexpected UnicodeDecodeError, please report)"
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else ""
        return f"{where}: {exc.strerror}" if where and exc.strerror else str(exc)
    if isinstance(exc, ValueError):
        return f"{exc} (unexpected {type(exc).__name__}; CHATFMT_DEBUG=1 shows the traceback)"
    return None


def guarded(func: F) -> F:
    """``func`` with the command line's error policy (see the module docstring)."""

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:  # the reader went away: click ends quietly with exit code 1
            raise
        except (ChatFmtError, OSError, ValueError) as exc:
            message = error_line(exc)
            if message is None or os.environ.get("CHATFMT_DEBUG"):
                raise
            raise fail(message) from None

    return run  # type: ignore[return-value]


def read_input_text(source: str) -> str:
    """The UTF-8 text of a file, or of standard input for ``-``; one-line errors."""
    if source == "-":
        stream = getattr(sys.stdin, "buffer", None)
        data = stream.read() if stream is not None else sys.stdin.read().encode()
        return decode_text(data, "<stdin>")
    path = Path(source)
    if path.is_dir():
        raise fail(f"{source}: is a directory, expected a JSON file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise fail(f"cannot read {source}: {exc.strerror}") from None
    return decode_text(data, source)


def read_json_input(source: str) -> Any:
    """Parsed JSON from a file path or ``-`` (standard input)."""
    text = read_input_text(source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(
            f"{source}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise fail(f"{source}: JSON nested too deeply") from None


def conversation_input(source: str) -> tuple[Any, Any]:
    """``(messages, tools)`` from a JSON file holding a message list or ``{"messages", "tools"}``."""
    data = read_json_input(source)
    if isinstance(data, list):
        return data, None
    if isinstance(data, dict) and "messages" in data:
        return data["messages"], data.get("tools")
    raise fail(f"{source}: expected a list of messages or an object with 'messages'")


#: Render parameters that ``--option`` may not set, and where they come from instead.
RENDER_PARAMETERS = {
    "messages": "give them in the input file",
    "tools": "give them in the input file as {'messages': [...], 'tools': [...]}",
    "now": "use --now",
    "add_generation_prompt": "use --no-generation-prompt",
    "continue_final_message": "use --continue-final-message",
    "sequence_start": "use --follow-up",
    "strict_history": "use --strict-history",
    "lossless": "use --lossless",
}
_PYTHON_LITERALS = {"True": True, "False": False, "None": None}
#: Spellings that look like a boolean or null but are neither JSON nor Python literals.
_AMBIGUOUS = {"true", "false", "null", "none", "yes", "no", "on", "off"}


def option_value(text: str) -> Any:
    """An ``--option`` value: Python ``True``/``False``/``None``, else JSON, else a plain string.

    A string that looks like a boolean or null but is neither (``TRUE``, ``yes``) or a
    malformed JSON value (``[1,``) is an error rather than silently a string; quote it as
    JSON (``'"yes"'``) to pass that string.
    """
    if text in _PYTHON_LITERALS:
        return _PYTHON_LITERALS[text]
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    stripped = text.strip()
    if stripped.lower() in _AMBIGUOUS or stripped[:1] in ('"', "[", "{") or _is_number(stripped):
        raise fail(
            f"--option value {text!r} is ambiguous or malformed: use true/false/null (or "
            "True/False/None), valid JSON, or a JSON string in quotes"
        )
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def template_options(pairs: list[str] | None, *, reserved: dict[str, str]) -> dict[str, Any]:
    """``--option NAME=VALUE`` pairs as template variables; ``reserved`` names are refused."""
    options: dict[str, Any] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise fail(f"--option {item!r}: expected NAME=VALUE")
        if key in reserved:
            raise fail(
                f"--option {key}: {key!r} is a render parameter, not a template option "
                f"({reserved[key]})"
            )
        options[key] = option_value(value)
    return options


_OPTION_LIKE = re.compile(r"[A-Za-z_]\w*=")


def check_output_path(output: Path | None) -> None:
    """Refuse ``-o NAME=VALUE``: ``-o`` used to set a template option in ``render``."""
    if output is not None and _OPTION_LIKE.match(str(output)) and not output.exists():
        raise fail(
            f"-o/--output {str(output)!r} looks like a template option: "
            "-o is --output; set template options with -O/--option NAME=VALUE"
        )


#: Help of every command's ``--tool-format`` option.
TOOL_FORMAT_HELP = (
    "Tool-call format for a template without one, e.g. hermes ('none': no pairing; "
    "default: the template's own{default})."
)
#: ``--tool-format`` of the commands that pair a template by themselves (chat, serve).
PairedToolFormat = Annotated[
    str | None,
    typer.Option(
        "--tool-format", help=TOOL_FORMAT_HELP.format(default=", else its default pairing")
    ),
]


def with_tool_format_option(template: Any, tool_format: str | None) -> Any:
    """``template`` (a name, path or Template) paired with ``--tool-format`` when it is given."""
    if tool_format is None:
        return template
    from ..api import get_template
    from ..tool_format import resolve_tool_format

    return resolve_tool_format(get_template(template), tool_format)
