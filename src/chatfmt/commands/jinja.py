"""``chatfmt detect FILE``: what a Jinja chat template is recognized as."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import ChatFmtError


def register(app: typer.Typer) -> None:
    """Add the ``detect`` command."""

    @app.command("detect")
    def detect(
        file: Annotated[
            Path,
            typer.Argument(
                help="A .jinja file, tokenizer_config.json, chat_template.json, model directory or GGUF file."
            ),
        ],
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
        parser: Annotated[
            bool,
            typer.Option(
                "--parser",
                help="Also print the output parser (native, or derived from the template).",
            ),
        ] = False,
    ) -> None:
        """Print which native template a Jinja chat template is (fingerprint or probe), or 'jinja (not recognized)'."""
        from ..jinja import detect as detect_source
        from ..jinja import read_path

        if not file.exists():
            raise ChatFmtError(f"{file}: file does not exist")
        src = read_path(file)
        if src is None:
            raise ChatFmtError(
                f"{file}: not a Jinja template file, tokenizer config, model directory or GGUF file"
            )
        rec = detect_source(src)
        if as_json:
            out = {
                "file": str(file),
                "recognized": rec.template.name if rec.template else None,
                "method": rec.method,
                "matches": list(rec.matches),
                "tokens": dict(rec.tokens or {}),
            }
            typer.echo(json.dumps(out, ensure_ascii=False, indent=2))
            return
        if rec.template is None:
            typer.echo("jinja (not recognized)")
        else:
            typer.echo(f"{rec.template.name} ({rec.method})")
        if parser:
            typer.echo(_parser_line(src))


def _parser_line(src: Any) -> str:
    """The tool/reasoning parsers the loaded template gets; a derived one is described."""
    from ..jinja.loaders import from_source
    from ..parsing import derive_parser

    tpl = from_source(src)
    if tpl.tool_parser is not None:
        return f"parser: {tpl.tool_parser} (reasoning: {tpl.reasoning_parser or 'none'})"
    return derive_parser(tpl).describe()
