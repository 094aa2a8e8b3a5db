"""``chatfmt detect FILE``: what a Jinja chat template is recognized as."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

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
