"""``chatfmt encode``: the token ids of a conversation and which of them are trained.

On a terminal the decoded tokens are printed inline, colored by trained / not trained and
template (control) / message (content) text; elsewhere (a pipe, ``--no-color``) a plain
table with a legend; ``--json`` prints the ids, labels and one record per token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import ChatFmtError
from ..requests import RenderRequest
from ._shared import (
    RENDER_PARAMETERS,
    TOOL_FORMAT_HELP,
    conversation_input,
    fail,
    template_options,
    with_tool_format_option,
)

if TYPE_CHECKING:
    from rich.console import Console

    from ..tokens.encode import Encoding

#: Styles of the terminal view, by (trained, control).
STYLES = {
    (True, False): "green",
    (True, True): "bold green underline",
    (False, False): "default",
    (False, True): "bold magenta",
}
LEGEND_PLAIN = (
    "loss: T = trained (labels = the token id), . = not trained (labels = -100); "
    "kind: control = template text, content = message text"
)


def dataset_row(path: Path, row: int, split: str | None) -> tuple[Any, Any]:
    """``(messages, tools)`` of row ``row`` of a dataset, read as ``chatfmt tokenize`` reads it."""
    from ..data_pipeline.readers import parse_row, read_rows
    from ..data_pipeline.records import record_to_conversation

    for index, raw in read_rows(path, split=split):
        if index == row:
            try:
                conversation = record_to_conversation(parse_row(raw))
            except ValueError as exc:  # JSON errors and ValidationError
                raise fail(f"{path}: row {row}: {exc}") from None
            return conversation["messages"], conversation.get("tools")
        if index > row:
            break
    raise fail(f"{path}: no row {row} (rows are numbered from 0, as in tokenize's errors file)")


def plain_view(encoding: Encoding) -> str:
    """A legend, then the token table (``Encoding.explain``)."""
    return f"{LEGEND_PLAIN}\n\n{encoding.explain()}\n"


def terminal_view(encoding: Encoding, console: Console) -> None:
    """The decoded tokens inline, each styled by trained / control, then a legend."""
    from rich.text import Text

    text = Text()
    for record in encoding.to_table():
        piece = str(record["text"]).replace("\n", "↵\n")
        text.append(piece, style=STYLES[(bool(record["trained"]), record["kind"] == "control")])
    console.print(text, end="\n\n", soft_wrap=True, highlight=False)
    legend = Text()
    for label, key in (
        ("trained", (True, False)),
        ("trained control", (True, True)),
        ("not trained", (False, False)),
        ("control, not trained", (False, True)),
    ):
        legend.append(f" {label} ", style=STYLES[key] + " reverse")
        legend.append(" ")
    legend.append(f"  {len(encoding)} tokens, {encoding.num_trained} trained")
    console.print(legend, highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``encode`` command."""

    @app.command("encode")
    def encode_cmd(
        source: Annotated[
            str,
            typer.Argument(
                help="JSON file with {'messages': [...], 'tools': [...]} or a bare list; '-' for "
                "stdin. With --row: a dataset (JSONL, JSON, Parquet, datasets folder)."
            ),
        ],
        template: Annotated[
            str, typer.Option("--template", "-t", help="Template name, alias, model id or file.")
        ],
        tokenizer: Annotated[
            str,
            typer.Option(
                "--tokenizer", help="tokenizer.json folder/file, .model, .gguf, tekken.json."
            ),
        ],
        row: Annotated[
            int | None,
            typer.Option(
                "--row",
                min=0,
                help="Show row N of a dataset, read as `chatfmt tokenize` reads it.",
            ),
        ] = None,
        split: Annotated[
            str | None, typer.Option("--split", help="Split of a DatasetDict folder (--row).")
        ] = None,
        generation_prompt: Annotated[
            bool,
            typer.Option(
                "--generation-prompt",
                help="Add the assistant generation prompt (an inference prompt; then nothing is "
                "trained unless --train-on says so).",
            ),
        ] = False,
        train_on: Annotated[
            str | None,
            typer.Option(
                "--train-on",
                help="all_assistant, last_assistant, all or none (default: all_assistant, "
                "or none with --generation-prompt).",
            ),
        ] = None,
        on_special: Annotated[
            str, typer.Option("--on-special", help="text (encode as plain text) or raise.")
        ] = "text",
        option: Annotated[
            list[str] | None,
            typer.Option(
                "--option", "-O", help="Template variable NAME=VALUE (repeatable; as in render)."
            ),
        ] = None,
        color: Annotated[
            bool | None,
            typer.Option(
                "--color/--no-color",
                help="Colored tokens (default: only on a terminal); --no-color prints a table.",
            ),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print input_ids, labels and each token as JSON.")
        ] = False,
        tool_format: Annotated[
            str | None,
            typer.Option("--tool-format", help=TOOL_FORMAT_HELP.format(default="")),
        ] = None,
        strict_history: Annotated[
            bool,
            typer.Option(
                "--strict-history",
                help="Only the official template's bytes: refuse text beside tool calls that "
                "it would drop (by default written as the model writes it).",
            ),
        ] = False,
    ) -> None:
        """Show a conversation's tokens and its training mask (trained / not trained / control)."""
        from ..tokens.encode import TRAIN_ON, encode

        if train_on is not None and train_on not in TRAIN_ON:
            raise fail(f"--train-on must be one of {', '.join(TRAIN_ON)}, got {train_on!r}")
        mask = train_on or ("none" if generation_prompt else "all_assistant")
        options = template_options(option, reserved=RENDER_PARAMETERS)
        if row is None:
            if split is not None:
                raise fail("--split needs --row (it selects a split of a dataset)")
            messages, tools = conversation_input(source)
        else:
            path = Path(source)
            if not path.exists():
                raise fail(f"input not found: {source}")
            messages, tools = dataset_row(path, row, split)
        try:
            request = RenderRequest(
                tools=tools,
                add_generation_prompt=generation_prompt,
                options=options,
                strict_history=strict_history,
            )
            tpl = with_tool_format_option(template, tool_format)
            encoding = encode(
                messages, tpl, tokenizer, request=request, train_on=mask, on_special=on_special
            )
        except ChatFmtError as exc:
            hint = ""
            if "nothing to train" in str(exc):
                hint = " (use --train-on none or all to see the tokens anyway)"
            raise fail(f"{exc}{hint}") from None
        if as_json:
            out = {**encoding.to_dict(), "tokens": encoding.to_table()}
            typer.echo(json.dumps(out, ensure_ascii=False))
            return
        from rich.console import Console

        console = Console(
            force_terminal=color,
            no_color=True if color is False else None,
            highlight=False,
        )
        if color is None:
            color = console.is_terminal and not console.no_color
        if color:
            terminal_view(encoding, console)
        else:
            typer.echo(plain_view(encoding), nl=False)
