"""The same tokenize pipeline on Ray Data, for clusters.

Input → ``map_batches`` (the worker code of :mod:`chatfmt.data_pipeline.pipeline`) →
``write_parquet`` into a staging folder, whose files are then named ``part-NNNNN.parquet``
in row order beside a ``_summary.json``: the local engine's layout (:mod:`.output`). Rows carry their input index from the start, so the
output's ``row`` column and the errors file name the same rows as the local engine, and a
row is only parsed and validated inside ``map_batches``, where a bad one is rejected alone
with its reason (Arrow's JSON reader would fail a whole block on one invalid line, or on
rows of different shapes):

* JSONL: the driver cuts the file into ranges of about 64 MiB on line ends and counts the
  lines before each; workers read their range and split it into numbered lines.
* Parquet files and Hugging Face ``datasets`` folders: the driver lists units from the
  metadata (a Parquet row group; a range of rows) with their first index, and the workers
  read them and pass each row on as a pickled object (exactly the values the local engine
  sees, whatever their types).
* A ``.json`` array: loaded by the driver, its rows passed on the same way.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..errors import TokenizationError
from .output import check_output, commit_output, output_paths, staged_output
from .pipeline import (
    OUTPUT_SCHEMA,
    WRITE_OPTIONS,
    Summary,
    TokenizeConfig,
    process_chunk,
    settings_record,
    summary_record,
)
from .readers import input_kind, load_hf, load_json_array, parquet_files

#: Columns of the rows handed to ``map_batches``: the input index, and either a raw JSON
#: line or a pickled row object.
_ROW = "__chatfmt_row"
_LINE = "__chatfmt_line"
_OBJECT = "__chatfmt_object"
#: Rows per unit of a ``datasets`` folder, and bytes per unit of a JSONL file.
_HF_UNIT = 1024
_JSONL_UNIT = 64 << 20

_CACHE: dict[tuple[str, str, str], TokenizeConfig] = {}


def _config(template: Any, tokenizer: str, policy: dict[str, Any]) -> TokenizeConfig:
    """Per Ray worker process: load template and tokenizer once."""
    from ..api import get_template
    from ..tokens.tokenizer import load_tokenizer

    key = (repr(template), tokenizer, json.dumps(policy, sort_keys=True, default=str))
    cfg = _CACHE.get(key)
    if cfg is None:
        tok = load_tokenizer(tokenizer)
        tok.threads = 1
        cfg = TokenizeConfig(template=get_template(template), tokenizer=tok, **policy)
        _CACHE[key] = cfg
    return cfg


def _jsonl_units(path: Path, size: int) -> list[dict[str, Any]]:
    """Byte ranges of about ``size`` bytes that end on line ends, with their first line's
    number (the driver reads the file once, counting newlines in C)."""
    units: list[dict[str, Any]] = []
    total = path.stat().st_size
    start = first = 0
    with path.open("rb") as fh:
        while start < total:
            fh.seek(min(start + size, total))
            fh.readline()  # on to the end of that line
            end = min(fh.tell(), total)
            units.append({"path": str(path), "start": start, "end": end, "first": first})
            fh.seek(start)
            left = end - start
            while left:
                block = fh.read(min(left, 8 << 20))
                if not block:  # the file shrank while being read
                    raise TokenizationError(f"{path}: the file changed while it was read")
                first += block.count(b"\n")
                left -= len(block)
            start = end
    return units


def _jsonl_lines(unit: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The non-blank lines of one range, numbered as the local engine numbers them."""
    with open(unit["path"], "rb") as fh:
        fh.seek(unit["start"])
        data = fh.read(unit["end"] - unit["start"])
    for i, line in enumerate(data.split(b"\n"), unit["first"]):
        if line.strip():
            yield {_ROW: i, _LINE: line}


def _objects(first: int, rows: Any) -> Iterator[dict[str, Any]]:
    """Rows numbered from ``first``, each pickled (any value types pass through unchanged)."""
    for i, row in enumerate(rows, first):
        yield {_ROW: i, _OBJECT: pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)}


def _parquet_rows(unit: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The rows of one Parquet row group."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(unit["path"]).read_row_group(unit["group"])
    return _objects(unit["first"], table.to_pylist())


def _hf_rows(unit: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A range of rows of a ``datasets`` folder (memory-mapped, so loading is cheap)."""
    ds = load_hf(Path(unit["path"]), unit["split"])
    return _objects(unit["first"], ds.select(range(unit["first"], unit["stop"])))


def _read(src: Path, split: str | None) -> Any:
    """The input as a Ray dataset of rows that carry their index (see the module doc)."""
    import ray.data

    kind = input_kind(src)
    if kind == "jsonl":
        return ray.data.from_items(_jsonl_units(src, _JSONL_UNIT)).flat_map(_jsonl_lines)
    if kind == "json":
        return ray.data.from_items(list(_objects(0, load_json_array(src))))
    units: list[dict[str, Any]] = []
    if kind == "parquet":
        import pyarrow.parquet as pq

        first = 0
        for f in parquet_files(src):
            meta = pq.ParquetFile(f).metadata
            for group in range(meta.num_row_groups):
                units.append({"path": str(f), "group": group, "first": first})
                first += meta.row_group(group).num_rows
        reader = _parquet_rows
    else:
        total = len(load_hf(src, split))
        for first in range(0, total, _HF_UNIT):
            stop = min(total, first + _HF_UNIT)
            units.append({"path": str(src), "split": split, "first": first, "stop": stop})
        reader = _hf_rows
    return ray.data.from_items(units).flat_map(reader)


def _good_rows(batch: Any) -> Any:
    """The rows that were tokenized, without the error columns, in the output schema."""
    import pyarrow.compute as pc

    good = batch.filter(pc.is_null(batch["error"])).drop_columns(["error", "error_kind"])
    return good.cast(OUTPUT_SCHEMA())


def _ordered_parts(folder: Path) -> list[Path]:
    """Ray's output files in row order, renamed ``<n>.parquet.tmp``; files without rows are
    removed. Raises if two files' row ranges overlap (the order would be lost)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    ranges: list[tuple[int, int, Path]] = []
    for path in folder.glob("*.parquet"):
        rows = pq.read_table(path, columns=["row"]).column("row")
        if len(rows) == 0:
            path.unlink()
            continue
        if len(rows) > 1 and not pc.all(pc.greater(rows[1:], rows[:-1])).as_py():
            raise TokenizationError(f"Ray wrote {path.name} with rows out of order")
        ranges.append((rows[0].as_py(), rows[-1].as_py(), path))
    ranges.sort()
    for (_, last, path), (first, _, following) in pairwise(ranges):
        if first <= last:
            raise TokenizationError(f"Ray wrote overlapping files {path.name}, {following.name}")
    parts = []
    for index, (_, _, path) in enumerate(ranges):
        parts.append(path.rename(folder / f"{index:09d}.parquet.tmp"))
    return parts


def _map_batch(batch: Any, template: Any, tokenizer: str, policy: dict[str, Any]) -> Any:
    import numpy as np
    import pyarrow as pa

    index = batch.column(_ROW).to_pylist()
    if _LINE in batch.column_names:
        raws = batch.column(_LINE).to_pylist()  # raw JSON lines, parsed by process_chunk
    else:  # our own pickles, made by _parquet_rows / _hf_rows / _read in this job
        raws = [pickle.loads(b) for b in batch.column(_OBJECT).to_pylist()]
    res = process_chunk(list(zip(index, raws)), _config(template, tokenizer, policy))
    n = len(index)
    position = {row: k for k, row in enumerate(index)}
    good = np.array([position[r] for r in res.rows.tolist()], dtype=np.int64)
    # One output row per input row (order kept): good rows carry tokens, bad rows an error.
    starts = np.zeros(n + 1, dtype=np.int32)
    lengths = np.zeros(n, dtype=np.int32)
    lengths[good] = np.diff(res.offsets)
    np.cumsum(lengths, out=starts[1:])
    ids, labels = res.ids, res.labels  # good rows come in input order
    trained = np.zeros(n, dtype=np.int32)
    trained[good] = res.num_trained
    truncated = np.zeros(n, dtype=bool)
    truncated[good] = res.truncated
    error: list[str | None] = [None] * n
    kind: list[str | None] = [None] * n
    for e in res.errors:
        error[position[e["row"]]] = e["reason"]
        kind[position[e["row"]]] = e["kind"]
    offsets = pa.array(starts)
    return pa.table(
        {
            "row": pa.array(index, pa.int64()),
            "input_ids": pa.ListArray.from_arrays(offsets, pa.array(ids, pa.int32())),
            "labels": pa.ListArray.from_arrays(offsets, pa.array(labels, pa.int32())),
            "attention_mask": pa.ListArray.from_arrays(
                offsets, pa.array(np.ones(len(ids), dtype=np.int8))
            ),
            "num_tokens": pa.array(lengths),
            "num_trained": pa.array(trained),
            "truncated": pa.array(truncated),
            "error": pa.array(error, pa.string()),
            "error_kind": pa.array(kind, pa.string()),
        }
    )


def tokenize_dataset_ray(
    input_path: str | Path,
    output_dir: str | Path,
    *,
    template: Any,
    tokenizer: str | Path,
    max_length: int | None = None,
    overflow: str = "error",
    train_on: str = "all_assistant",
    on_special: str = "text",
    errors_path: str | Path | None = None,
    batch_size: int = 64,
    options: dict[str, Any] | None = None,
    split: str | None = None,
    overwrite: bool = False,
) -> Summary:
    """Tokenize ``input_path`` (JSONL, a JSON array, Parquet or a ``datasets`` folder) on the
    current Ray cluster into the folder ``output_dir``: the local engine's layout
    (``part-00000.parquet`` … in row order, ``_summary.json``, ``OUT.errors.jsonl``).

    Calls ``ray.init()`` if Ray is not initialised (connects to ``RAY_ADDRESS`` if set).
    """
    from ..api import get_template

    try:
        import ray
        import ray.data
    except ImportError:
        raise TokenizationError("the Ray engine needs: pip install 'chatfmt[ray]'") from None
    if not isinstance(tokenizer, (Path, str)):
        raise TokenizationError("the Ray engine needs the tokenizer as a path (workers load it)")
    if overflow != "error" and max_length is None:
        raise TokenizationError(f"overflow={overflow!r} needs max_length")
    from ..tokens.control import check_tokenizer

    check_tokenizer(template, tokenizer)  # a wrong tokenizer: one error, not one per row
    started = time.perf_counter()
    src = Path(input_path)
    out, err_path = output_paths(output_dir, errors_path)
    check_output(out, err_path, overwrite=overwrite)
    input_kind(src)
    policy = {
        "max_length": max_length,
        "overflow": overflow,
        "train_on": train_on,
        "on_special": on_special,
        "options": dict(options or {}),
    }
    summary = Summary(
        output=str(out),
        errors_file=str(err_path),
        input=str(src),
        engine="ray",
        template=get_template(template).name,
        tokenizer=str(tokenizer),
        settings=settings_record(policy),
    )
    if not ray.is_initialized():
        ray.init()
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    with staged_output(out, err_path) as staging:
        mapped = (
            _read(src, split)
            .map_batches(
                _map_batch,
                batch_format="pyarrow",
                batch_size=batch_size,
                fn_args=(template, str(Path(tokenizer).resolve()), policy),
            )
            .materialize()
        )
        with staging.errors.open("w", encoding="utf-8") as fh:
            for batch in mapped.select_columns(
                ["row", "error", "error_kind", "num_tokens", "num_trained", "truncated"]
            ).iter_batches(batch_format="pyarrow"):
                _count(batch.to_pydict(), summary, fh)
        mapped.map_batches(_good_rows, batch_format="pyarrow").write_parquet(
            str(staging.folder), **WRITE_OPTIONS
        )
        parts = _ordered_parts(staging.folder)
        summary.seconds = time.perf_counter() - started
        summary.parts = commit_output(
            staging, out, err_path, parts, summary_record(summary), overwrite=overwrite
        )
    return summary


def _count(cols: dict[str, list[Any]], summary: Summary, errors_fh: Any) -> None:
    """Count one batch of mapped rows; rejected rows go to the errors file."""
    errors = []
    for row, err, kind, ntok, ntrain, trunc in zip(
        cols["row"],
        cols["error"],
        cols["error_kind"],
        cols["num_tokens"],
        cols["num_trained"],
        cols["truncated"],
    ):
        summary.samples_in += 1
        if err is None:
            summary.samples_out += 1
            summary.tokens += ntok
            summary.trained_tokens += ntrain
            summary.truncated += int(trunc)
        else:
            errors.append({"row": row, "kind": kind, "reason": err})
    summary.add_errors(errors, errors_fh)
