"""The ``chatfmt`` command line: list, show and render templates (more commands in :mod:`chatfmt.commands`)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from .api import get_template, list_templates
from .commands._shared import (
    RENDER_PARAMETERS,
    TOOL_FORMAT_HELP,
    check_output_path,
    conversation_input,
    fail,
    guarded,
    option_value,
    read_json_input,
    template_options,
    with_tool_format_option,
)
from .errors import ChatFmtError, TemplateError
from .requests import RenderRequest

__all__ = ["app", "fail", "main", "option_value", "read_json_input", "templates_markdown"]

F = TypeVar("F", bound=Callable[..., Any])


class GuardedTyper(typer.Typer):
    """A Typer app whose every command reports input errors in one line (see :func:`guarded`)."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        register = super().command(*args, **kwargs)

        def decorator(func: F) -> F:
            register(guarded(func))
            return func

        return decorator


app = GuardedTyper(
    name="chatfmt",
    help="Exact, fast and injection-safe LLM chat formats.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"chatfmt {version('chatfmt')}")
        except PackageNotFoundError:  # run from a source tree that is not installed
            typer.echo("chatfmt (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print chatfmt's version and exit.",
        ),
    ] = False,
) -> None:
    """Exact, fast and injection-safe LLM chat formats."""


def templates_markdown() -> str:
    """The template catalogue as a Markdown table (the body of ``docs/templates.md``)."""

    def cell(values: list[str]) -> str:
        return "<br>".join(f"`{v}`" for v in values).replace("|", "\\|")

    lines = [
        "| name | aliases | model ids | source of truth | tools | reasoning | stop words "
        "| left out of the history |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in list_templates():
        cfg = t.generation_config
        stops = [json.dumps(w, ensure_ascii=False)[1:-1] for w in cfg.all_stop_words]
        source = t.source.replace("|", "\\|")
        lines.append(
            f"| `{t.name}` | {cell(list(t.aliases))} | {cell(list(t.model_ids))} | {source} "
            f"| {'yes' if t.supports_tools else 'no'} | {'yes' if t.supports_reasoning else 'no'} "
            f"| {cell(stops)} | {t.history.summary(t.supports_tools).replace('<', '&lt;')} |"
        )
    return "\n".join(lines) + "\n"


@app.command("templates")
def templates_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the Markdown catalogue (docs/templates.md).")
    ] = False,
) -> None:
    """List the built-in templates with their parsers (tool parser, its origin, reasoning parser)."""
    if markdown:
        typer.echo(templates_markdown(), nl=False)
        return
    from .parsing.support import parser_support

    rows = []
    for t in list_templates():
        support = parser_support(t)
        rows.append(
            {
                **t.info(),
                "kind": support.kind,
                "tool_parser": support.tool_parser,
                "tool_parser_origin": support.tool_parser_origin,
                "end_of_turn": list(support.end_of_turn),
            }
        )
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    header = ("name", "aliases", "kind", "tool parser", "origin", "reasoning", "stop words")
    table = [
        (
            r["name"],
            ", ".join(r["aliases"]),
            r["kind"],
            r["tool_parser"] or "plain",
            r["tool_parser_origin"],
            r["reasoning_parser"] or "",
            " ".join(
                json.dumps(w, ensure_ascii=False) for w in r["generation_config"]["stop_words"]
            ),
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *table)]
    for row in (header, *table):
        typer.echo("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())


@app.command("show")
def show_cmd(
    name: Annotated[str, typer.Argument(help="Template name, alias, model id or file.")],
) -> None:
    """Show a template's format (an example render) and its generation config."""
    try:
        tpl = get_template(name)
        info = tpl.info()
        example = [
            {"role": "system", "content": "{system}"},
            {"role": "user", "content": "{user}"},
            {"role": "assistant", "content": "{assistant}"},
            {"role": "user", "content": "{user}"},
        ]
        try:
            info["example"] = tpl.render(example)
        except ChatFmtError:
            info["example"] = tpl.render(example[1:])
    except ChatFmtError as exc:
        raise fail(str(exc)) from None
    typer.echo(json.dumps(info, ensure_ascii=False, indent=2))


@app.command("render")
def render_cmd(
    template: Annotated[
        str, typer.Option("--template", "-t", help="Template name, alias, model id or file.")
    ],
    source: Annotated[
        str,
        typer.Argument(
            help="JSON file with {'messages': [...], 'tools': [...]} or a bare list; '-' for stdin."
        ),
    ] = "-",
    no_generation_prompt: Annotated[
        bool,
        typer.Option("--no-generation-prompt", help="Do not add the assistant generation prompt."),
    ] = False,
    continue_final: Annotated[
        bool, typer.Option("--continue-final-message", help="Leave the final message open.")
    ] = False,
    follow_up: Annotated[
        bool,
        typer.Option(
            "--follow-up", help="sequence_start=False: render only what a follow-up turn adds."
        ),
    ] = False,
    now: Annotated[
        str | None, typer.Option("--now", help="Date for templates that print one (YYYY-MM-DD).")
    ] = None,
    strict_history: Annotated[
        bool,
        typer.Option(
            "--strict-history",
            help="Only the official template's bytes: refuse text beside tool calls that it "
            "would drop (by default written as the model writes it).",
        ),
    ] = False,
    lossless: Annotated[
        bool,
        typer.Option(
            "--lossless",
            help="Refuse what the format's own rules leave out of the history (earlier "
            "turns' reasoning, tools with no definition section) instead of dropping it.",
        ),
    ] = False,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-O",
            help="Template variable NAME=VALUE (repeatable); VALUE is JSON or True/False/None, "
            "else a plain string.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the prompt (or --json segments) to this file."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the segments as JSON.")] = False,
    tool_format: Annotated[
        str | None,
        typer.Option("--tool-format", help=TOOL_FORMAT_HELP.format(default="")),
    ] = None,
) -> None:
    """Render a conversation with a template."""
    check_output_path(output)
    messages, tools = conversation_input(source)
    options = template_options(option, reserved=RENDER_PARAMETERS)
    request = RenderRequest(
        tools=tools,
        add_generation_prompt=not no_generation_prompt and not continue_final,
        continue_final_message=continue_final,
        sequence_start=not follow_up,
        now=now,
        options=options,
        strict_history=strict_history,
        lossless=lossless,
    )
    tpl = with_tool_format_option(get_template(template), tool_format)
    if as_json:  # segments: a Jinja template whose output hides the messages has none
        try:
            segments = tpl.segments(messages, request=request)
        except TemplateError as exc:
            raise fail(f"{exc} (render without --json for the text)") from None
        text = json.dumps([s.to_dict() for s in segments], ensure_ascii=False, indent=2) + "\n"
    else:  # the text, exactly as chatfmt.render returns it
        text = tpl.render(messages, request=request)
    write_text(text, output)


def write_text(text: str, output: Path | None) -> None:
    """``text`` as UTF-8 to ``output`` or standard output; a lone surrogate is a clear error."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise fail(
            f"the output contains {text[exc.start]!r} at char {exc.start}, which cannot be "
            "written as UTF-8 (a lone surrogate in the input)"
        ) from None
    if output is not None:
        output.write_bytes(data)
        return
    stream = getattr(sys.stdout, "buffer", None)
    if stream is not None:
        stream.write(data)
    else:
        sys.stdout.write(text)
    sys.stdout.flush()


def _load_command_modules() -> None:
    from . import commands

    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):  # shared helpers, not a command
            continue
        module = importlib.import_module(f"{commands.__name__}.{mod.name}")
        module.register(app)


_load_command_modules()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
