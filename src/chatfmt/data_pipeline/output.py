"""The tokenized dataset's folder: Parquet part files and a ``_summary.json``, written atomically.

Layout of ``OUT/`` (what pyarrow, pandas, Spark, Ray and ``datasets`` read as one dataset)::

    OUT/part-00000.parquet   rows in input order, part after part
    OUT/part-00001.parquet
    OUT/_summary.json        counts, parts, template, tokenizer
    OUT.errors.jsonl         beside the folder: one line per rejected row

A run writes into hidden staging names beside ``OUT`` and renames them into place only when it
has finished, so a failed or interrupted run leaves neither a half-written folder nor an
errors file behind, and an existing output is replaced only with ``overwrite`` and only when
everything in it is a previous run's output.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .readers import DatasetError

#: The summary file inside the output folder (the ``_`` prefix keeps pyarrow, pandas, Spark
#: and Ray from reading it as data).
SUMMARY_NAME = "_summary.json"
_PART = re.compile(r"part-\d+\.parquet")
_PARQUET_SUFFIXES = (".parquet", ".pq")


def part_name(index: int, count: int) -> str:
    """``part-00000.parquet``: zero-padded so names sort in row order (wider past 100,000)."""
    return f"part-{index:0{max(5, len(str(count - 1)))}d}.parquet"


def output_paths(output: str | Path, errors: str | Path | None) -> tuple[Path, Path]:
    """The output folder and the errors file (default ``OUT.errors.jsonl`` beside it)."""
    out = Path(output)
    if out.name in ("", ".."):
        raise DatasetError(f"{out}: name a new folder for the output, e.g. -o train")
    return out, Path(errors) if errors else default_errors_path(out)


def default_errors_path(output: Path) -> Path:
    """``OUT.errors.jsonl`` beside the output (its suffix replaced)."""
    name = output.name
    for suffix in (".parquet", ".pq", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return output.with_name(name + ".errors.jsonl")


def check_output(out: Path, errors_path: Path, *, overwrite: bool = False) -> None:
    """Refuse an output path that would lose or mix data; call before any work.

    ``OUT`` must name a folder (not ``*.parquet``, not ``.``); an existing non-empty folder is
    replaced only with ``overwrite``, and only if it holds nothing but a previous run's
    output. The errors file must lie outside it.
    """
    if errors_path.resolve().is_relative_to(out.resolve()):
        raise DatasetError(
            f"{errors_path}: the errors file must be outside the output folder {out}"
        )
    suffix = out.suffix.lower()
    if suffix in _PARQUET_SUFFIXES:
        raise DatasetError(
            f"{out}: the output is a folder of Parquet part files (part-00000.parquet, …, "
            f"{SUMMARY_NAME}); name a folder without the {out.suffix!r} suffix, e.g. "
            f"{out.with_suffix('')}"
        )
    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out}: exists and is not a folder; the output is a folder")
    entries = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if not entries:
        return
    if not overwrite:
        raise DatasetError(
            f"{out}: folder exists and is not empty; pass --overwrite (overwrite=True) to "
            "replace a previous tokenize output"
        )
    foreign = [name for name in entries if name != SUMMARY_NAME and not _PART.fullmatch(name)]
    if foreign:
        shown = ", ".join(foreign[:5]) + (", …" if len(foreign) > 5 else "")
        raise DatasetError(
            f"{out}: holds files that are not a tokenize output ({shown}); not replacing it"
        )


@dataclass(frozen=True)
class Staging:
    """Where a run writes before it commits: a hidden folder and errors file beside the output."""

    folder: Path
    errors: Path


@contextlib.contextmanager
def staged_output(out: Path, errors_path: Path) -> Iterator[Staging]:
    """Staging names for one run; removed again when the run raises (or is interrupted)."""
    tag = f"partial-{os.getpid()}"
    staging = Staging(
        folder=out.with_name(f".{out.name}.{tag}"),
        errors=errors_path.with_name(f".{errors_path.name}.{tag}"),
    )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        errors_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging.folder, ignore_errors=True)  # left by a killed run with this pid
        staging.folder.mkdir()
    except OSError as exc:
        raise DatasetError(f"{out}: cannot create the output ({exc.strerror or exc})") from None
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging.folder, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            staging.errors.unlink()
        raise


def commit_output(
    staging: Staging,
    out: Path,
    errors_path: Path,
    parts: Sequence[Path],
    summary: dict[str, Any],
    *,
    overwrite: bool = False,
) -> list[dict[str, Any]]:
    """Name ``parts`` (staged files, in row order) ``part-NNNNN.parquet``, write the summary
    and move the folder and errors file into place. Returns the parts list of the summary.

    With no parts, an empty ``part-00000.parquet`` of the output schema is written, so
    readers still find the columns.
    """
    import pyarrow.parquet as pq

    from .pipeline import OUTPUT_SCHEMA, WRITE_OPTIONS

    if not parts:
        empty = staging.folder / "empty.parquet.tmp"
        pq.write_table(OUTPUT_SCHEMA().empty_table(), empty, **WRITE_OPTIONS)
        parts = [empty]
    listed: list[dict[str, Any]] = []
    for index, path in enumerate(parts):
        name = part_name(index, len(parts))
        path.rename(staging.folder / name)
        listed.append(
            {"file": name, "rows": pq.ParquetFile(staging.folder / name).metadata.num_rows}
        )
    (staging.folder / SUMMARY_NAME).write_text(
        json.dumps({**summary, "parts": listed}, indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    if not staging.errors.exists():
        staging.errors.touch()
    check_output(
        out, errors_path, overwrite=overwrite
    )  # again: the folder may have changed meanwhile
    os.replace(staging.errors, errors_path)
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists():
        out.rename(old)
    staging.folder.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    return listed
