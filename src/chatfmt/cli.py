"""The ``chatfmt`` command line: list, show and render templates (more commands in :mod:`chatfmt.commands`)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .api import get_template, list_templates
from .errors import ChatFmtError

app = typer.Typer(
    name="chatfmt",
    help="Exact, fast and injection-safe LLM chat formats.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def fail(message: str) -> typer.Exit:
    """Print an error for the user and return the exit to raise."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=2)


def read_json_input(source: str) -> Any:
    """Read JSON from a file path or ``-`` (standard input)."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot read {source}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(
            f"{source}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None


#: Render parameters that ``--option`` may not set, and where they come from instead.
RENDER_PARAMETERS = {
    "messages": "give them in the input file",
    "tools": "give them in the input file as {'messages': [...], 'tools': [...]}",
    "now": "use --now",
    "add_generation_prompt": "use --no-generation-prompt",
    "continue_final_message": "use --continue-final-message",
    "sequence_start": "use --follow-up",
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


def templates_markdown() -> str:
    """The template catalogue as a Markdown table (the body of ``docs/templates.md``)."""

    def cell(values: list[str]) -> str:
        return "<br>".join(f"`{v}`" for v in values).replace("|", "\\|")

    lines = [
        "| name | aliases | model ids | source of truth | tools | reasoning | stop words |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in list_templates():
        cfg = t.generation_config
        stops = [json.dumps(w, ensure_ascii=False)[1:-1] for w in cfg.all_stop_words]
        source = t.source.replace("|", "\\|")
        lines.append(
            f"| `{t.name}` | {cell(list(t.aliases))} | {cell(list(t.model_ids))} | {source} "
            f"| {'yes' if t.supports_tools else 'no'} | {'yes' if t.supports_reasoning else 'no'} "
            f"| {cell(stops)} |"
        )
    return "\n".join(lines) + "\n"


@app.command("templates")
def templates_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the Markdown catalogue (docs/templates.md).")
    ] = False,
) -> None:
    """List the built-in templates."""
    if markdown:
        typer.echo(templates_markdown(), nl=False)
        return
    rows = [t.info() for t in list_templates()]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    header = ("name", "aliases", "tools", "reasoning", "stop words")
    table = [
        (
            r["name"],
            ", ".join(r["aliases"]),
            "yes" if r["supports_tools"] else "",
            "yes" if r["supports_reasoning"] else "",
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
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-o",
            help="Template variable NAME=VALUE (repeatable); VALUE is JSON or True/False/None, "
            "else a plain string.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the segments as JSON.")] = False,
) -> None:
    """Render a conversation with a template."""
    data = read_json_input(source)
    if isinstance(data, list):
        messages, tools = data, None
    elif isinstance(data, dict) and "messages" in data:
        messages, tools = data["messages"], data.get("tools")
    else:
        raise fail(f"{source}: expected a list of messages or an object with 'messages'")
    options = {}
    for item in option or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise fail(f"--option {item!r}: expected NAME=VALUE")
        if key in RENDER_PARAMETERS:
            raise fail(
                f"--option {key}: {key!r} is a render parameter, not a template option "
                f"({RENDER_PARAMETERS[key]})"
            )
        options[key] = option_value(value)
    try:
        segments = get_template(template).segments(
            messages,
            tools=tools,
            add_generation_prompt=not no_generation_prompt and not continue_final,
            continue_final_message=continue_final,
            sequence_start=not follow_up,
            now=now,
            **options,
        )
    except ChatFmtError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps([s.to_dict() for s in segments], ensure_ascii=False, indent=2))
    else:
        text = "".join(s.text for s in segments)
        try:
            sys.stdout.write(text)
        except UnicodeEncodeError as exc:
            raise fail(
                f"the prompt contains {text[exc.start]!r} at char {exc.start}, which cannot be "
                "written as UTF-8 (a lone surrogate in the input)"
            ) from None
        sys.stdout.flush()


def _load_command_modules() -> None:
    from . import commands

    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{mod.name}")
        module.register(app)


_load_command_modules()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
