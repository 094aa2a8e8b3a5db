"""``chatfmt parse``: model output (a file or stdin) → the assistant message as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import ChatFmtError
from ..textfile import decode_text
from ._shared import TOOL_FORMAT_HELP, with_tool_format_option


class _InputError(ChatFmtError):
    """A command-line input that cannot be used (reported as one line)."""


def _read_text(source: str, what: str) -> str:
    """The UTF-8 text of a file, or of standard input for ``-``."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except FileNotFoundError:
        raise _InputError(f"{what} {source}: no such file") from None
    except IsADirectoryError:
        raise _InputError(f"{what} {source}: is a directory, not a file") from None
    except OSError as exc:
        raise _InputError(f"cannot read {what} {source}: {exc.strerror}") from None
    name = "standard input" if source == "-" else f"{what} {source}"
    return decode_text(data, name, error=_InputError)


def _read_tools(source: str) -> list[Any]:
    text = _read_text(source, "tools file")
    try:
        tools = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _InputError(
            f"tools file {source}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    if isinstance(tools, dict) and isinstance(tools.get("tools"), list):
        tools = tools["tools"]
    if not isinstance(tools, list):
        raise _InputError(
            f"tools file {source}: expected a JSON list of OpenAI tools, got {type(tools).__name__}"
        )
    return tools


#: Parser options that take Python objects (or token ids the command does not read).
_API_ONLY = ("id_factory", "special_token_ids", "tokenizer")


def _options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a value is JSON if it parses (``true``, ``3``, ``[…]``), else a string."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise _InputError(f"--option {pair!r}: expected KEY=VALUE")
        if key.strip() in _API_ONLY:
            raise _InputError(f"--option {key.strip()}: only available from Python")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def register(app: typer.Typer) -> None:
    """Add the ``parse`` command."""

    @app.command("parse")
    def parse_cmd(
        template: Annotated[
            str,
            typer.Option(
                "--template", "-t", help="Template name, alias or file, or a parser name."
            ),
        ],
        file: Annotated[
            str, typer.Argument(help="File with the model's output text; '-' or none: stdin.")
        ] = "-",
        tools: Annotated[
            str | None, typer.Option("--tools", help="JSON file with the OpenAI tools list.")
        ] = None,
        stream: Annotated[
            bool,
            typer.Option("--stream", help="Parse in chunks; print one delta JSON per line."),
        ] = False,
        chunk_size: Annotated[
            int, typer.Option("--chunk-size", min=1, help="Characters per chunk with --stream.")
        ] = 4,
        truncated: Annotated[
            bool,
            typer.Option("--truncated", help="Generation hit its token limit (finish 'length')."),
        ] = False,
        option: Annotated[
            list[str] | None,
            typer.Option(
                "--option", "-O", help="Template option KEY=VALUE (e.g. enable_thinking=false)."
            ),
        ] = None,
        tool_format: Annotated[
            str | None,
            typer.Option("--tool-format", help=TOOL_FORMAT_HELP.format(default="")),
        ] = None,
        parser: Annotated[
            str | None,
            typer.Option(
                "--parser",
                help="Read tool calls with this tool parser (e.g. pythonic) instead of the "
                "template's; the template still chooses reasoning and end of turn.",
            ),
        ] = None,
    ) -> None:
        """Parse model output into an OpenAI assistant message (tool calls, reasoning).

        Prints {"message": …, "finish_reason": …, "trailing_text": …}; with --stream, one
        delta per line, then a last line {"finish_reason": …, "trailing_text": …}.
        trailing_text is what the model wrote after its end-of-turn marker. Errors are one
        line (the command line's shared error policy, ``commands._shared.guarded``).
        """
        from ..parsing import StreamParser, parse
        from ..parsing.openai_wire import delta_dicts

        text = _read_text(file, "output file")
        tool_list = _read_tools(tools) if tools is not None else None
        opts = _options(option or [])
        tpl = with_tool_format_option(template, tool_format)
        if parser is not None:
            from ..tool_format import with_tool_parser

            tpl = with_tool_parser(tpl, parser)
        if not stream:
            msg = parse(text, tpl, tools=tool_list, truncated=truncated, **opts)
            typer.echo(
                _line(
                    {
                        "message": msg.to_openai(),
                        "finish_reason": msg.finish_reason,
                        "trailing_text": msg.trailing_text,
                    }
                )
            )
            return
        sp = StreamParser(tpl, tools=tool_list, **opts)
        for start in range(0, len(text), chunk_size):
            for delta in delta_dicts(sp.feed(text[start : start + chunk_size])):
                typer.echo(_line(delta))
        for delta in delta_dicts(sp.finish(truncated=truncated)):
            typer.echo(_line(delta))
        typer.echo(_line({"finish_reason": sp.finish_reason, "trailing_text": sp.trailing_text}))
