"""``chatfmt tokenize`` and ``chatfmt convert``: datasets to token ids, and prompts between families."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import ChatFmtError
from ._shared import fail as _fail
from ._shared import template_options

#: Encode parameters ``--option`` may not set in ``tokenize`` (each has its own flag or field).
_TOKENIZE_RESERVED = {
    "messages": "they come from the dataset rows",
    "tools": "they come from the dataset rows' 'tools' field",
    "train_on": "use --train-on",
    "max_length": "use --max-length",
    "on_special": "use --on-special",
    "strict_history": "use --strict-history",
}


def tokenize_cmd(
    input_path: Annotated[
        Path,
        typer.Argument(help="JSONL, JSON, Parquet file/folder or a datasets save_to_disk folder."),
    ],
    template: Annotated[
        str, typer.Option("--template", "-t", help="Template name, model id or file.")
    ],
    tokenizer: Annotated[
        str,
        typer.Option("--tokenizer", help="tokenizer.json folder/file, .model, .gguf, tekken.json."),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Output folder: part-00000.parquet … and _summary.json (errors: OUT.errors.jsonl).",
        ),
    ],
    workers: Annotated[int, typer.Option("--workers", "-j", min=1, help="Worker processes.")] = 1,
    max_length: Annotated[
        int | None, typer.Option("--max-length", min=1, help="Token limit per sample.")
    ] = None,
    truncate: Annotated[
        bool, typer.Option("--truncate", help="Cut samples longer than --max-length.")
    ] = False,
    drop: Annotated[
        bool,
        typer.Option(
            "--drop", help="Drop samples longer than --max-length (listed in the errors file)."
        ),
    ] = False,
    train_on: Annotated[
        str,
        typer.Option(
            "--train-on",
            help="all_assistant, last_assistant, all or none (what gets loss; none = no labels).",
        ),
    ] = "all_assistant",
    on_special: Annotated[
        str, typer.Option("--on-special", help="text (encode as plain text) or raise.")
    ] = "text",
    errors_file: Annotated[
        Path | None, typer.Option("--errors", help="Errors JSONL (default OUT.errors.jsonl).")
    ] = None,
    split: Annotated[
        str | None, typer.Option("--split", help="Split of a DatasetDict folder.")
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", help="local (multiprocessing) or ray.")
    ] = "local",
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", "-O", help="Template option NAME=VALUE (repeatable; VALUE as in render)."
        ),
    ] = None,
    no_progress: Annotated[
        bool, typer.Option("--no-progress", help="Hide the progress bar.")
    ] = False,
    no_pin: Annotated[
        bool,
        typer.Option(
            "--no-pin", help="Let the OS move workers between CPUs (default: one CPU each)."
        ),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Replace the output folder of a previous tokenize run."),
    ] = False,
    strict_history: Annotated[
        bool,
        typer.Option(
            "--strict-history",
            help="Only the official template's bytes: reject rows with text beside tool calls "
            "that it would drop (by default written as the model writes it).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Also write a self-contained HTML report (length histogram, rows not written "
            "by reason, first samples coloured by mask).",
        ),
    ] = None,
    report_samples: Annotated[
        int, typer.Option("--report-samples", min=0, help="Samples drawn in the report.")
    ] = 10,
) -> None:
    """Tokenize a chat dataset (OpenAI messages or ShareGPT) into input_ids/labels/attention_mask Parquet.

    Exit status: 0 rows written; 1 no row written (all rejected, or none); 2 failed, no output.
    """
    from ..tokens.encode import TRAIN_ON

    if train_on not in TRAIN_ON:
        raise _fail(f"--train-on must be one of {', '.join(TRAIN_ON)}, got {train_on!r}")
    if truncate and drop:
        raise _fail("use either --truncate or --drop, not both")
    if (truncate or drop) and max_length is None:
        raise _fail("--truncate and --drop need --max-length")
    overflow = "truncate" if truncate else "drop" if drop else "error"
    if not input_path.exists():
        raise _fail(f"input not found: {input_path}")
    try:
        common: dict[str, Any] = {
            "template": template,
            "tokenizer": tokenizer,
            "max_length": max_length,
            "overflow": overflow,
            "train_on": train_on,
            "on_special": on_special,
            "errors_path": errors_file,
            "options": {
                **template_options(option, reserved=_TOKENIZE_RESERVED),
                **({"strict_history": True} if strict_history else {}),
            },
            "split": split,
            "overwrite": overwrite,
        }
        if engine == "ray":
            from ..data_pipeline.ray_engine import tokenize_dataset_ray

            summary = tokenize_dataset_ray(input_path, output, **common)
        elif engine == "local":
            from ..data_pipeline.pipeline import tokenize_dataset

            summary = tokenize_dataset(
                input_path,
                output,
                workers=workers,
                progress=None if not no_progress else False,
                pin_workers=not no_pin,
                **common,
            )
        else:
            raise _fail(f"--engine must be local or ray, got {engine!r}")
    except ChatFmtError as exc:
        raise _fail(str(exc)) from None
    typer.echo(json.dumps(summary.to_dict(), indent=2) if as_json else summary.report())
    if report is not None:
        from ..data_pipeline.report import write_report

        try:
            write_report(summary, output, tokenizer, report, n_samples=report_samples)
        except (ChatFmtError, OSError) as exc:
            raise _fail(f"cannot write the report {report}: {exc}") from None
        typer.secho(f"report: {report}", err=True)
    if not summary.samples_out:
        why = (
            f"all {summary.samples_in} rows were rejected (see {summary.errors_file})"
            if summary.samples_in
            else "the input has no rows"
        )
        typer.secho(f"error: no rows were written: {why}", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=1)


def convert_cmd(
    input_path: Annotated[
        Path, typer.Argument(help="JSONL/Parquet/datasets rows holding rendered prompts.")
    ],
    source: Annotated[str, typer.Option("--from", help="Template the prompts were rendered with.")],
    target: Annotated[str, typer.Option("--to", help="Template to render them with.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output JSONL.")],
    field: Annotated[str, typer.Option("--field", help="Column with the prompt text.")] = "text",
    errors_file: Annotated[Optional[Path], typer.Option("--errors", help="Errors JSONL.")] = None,  # noqa: UP045
) -> None:
    """Convert datasets stored as rendered prompts from one template family to another.

    Rows that fail (including turns with tool calls, results or definitions, which are not
    converted) are listed in the errors file; the exit code is 1 when no row was converted.
    """
    from ..api import get_template
    from ..data_pipeline.convert import convert_dataset

    if not input_path.exists():
        raise _fail(f"input not found: {input_path}")
    counts = convert_dataset(
        input_path,
        output,
        source=get_template(source),
        target=get_template(target),
        field=field,
        errors_path=errors_file,
    )
    typer.echo(
        f"rows: {counts['rows']}  converted: {counts['converted']}  errors: {counts['errors']}\n"
        f"output: {counts['output'] or f'none written ({output} left as it was)'}\n"
        f"errors file: {counts['errors_file'] or 'none (no row failed)'}"
    )
    if not counts["converted"]:
        typer.secho(
            "error: no row was converted"
            + (f"; see {counts['errors_file']}" if counts["errors_file"] else " (no input rows)"),
            fg=typer.colors.RED,
            err=True,
        )
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Add ``tokenize`` and ``convert`` to the ``chatfmt`` app."""
    app.command("tokenize")(tokenize_cmd)
    app.command("convert")(convert_cmd)
