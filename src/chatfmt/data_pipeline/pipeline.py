"""Tokenize a chat dataset to a folder of Parquet parts with parallel workers; nothing is
dropped silently.

Every input row ends in exactly one place: the output (``row`` column keeps its
index) or the errors file (JSONL ``{"row", "kind", "reason"}``), and the summary
counts both. The input is cut into parts of consecutive rows; each worker tokenizes a part
and writes it as one Parquet file itself, so the parent only reads rows and collects
counts (the folder layout and its atomic commit: :mod:`.output`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing as mp
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import count, islice
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import ChatFmtError, TokenizationError
from ..template import Template
from ..tokens.control import check_tokenizer
from ..tokens.encode import Encoding, SequenceTooLongError, encode_batch
from ..tokens.tokenizer import Tokenizer, load_tokenizer
from .output import check_output, commit_output, output_paths, staged_output
from .output import default_errors_path as default_errors_path  # convert imports it from here
from .readers import (
    DatasetError,
    RowTooDeepError,
    count_rows,
    input_kind,
    parse_row,
    read_rows,
)
from .records import record_to_conversation

Overflow = Literal["error", "truncate", "drop"]


@dataclass(frozen=True)
class TokenizeConfig:
    """What each worker needs: the template, tokenizer and encoding policy."""

    template: Template
    tokenizer: Tokenizer
    max_length: int | None = None
    overflow: Overflow | str = "error"
    train_on: str = "all_assistant"
    on_special: str = "text"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChunkResult:
    """A worker's output for one chunk: concatenated token arrays plus rejected rows."""

    rows: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray
    labels: np.ndarray
    num_trained: np.ndarray
    truncated: np.ndarray
    errors: list[dict[str, Any]]
    n_in: int


@dataclass
class PartResult:
    """What a worker reports for one part: the file it wrote (``None`` when every row was
    rejected), its counts and the rejected rows."""

    file: Path | None
    rows: int
    tokens: int
    trained_tokens: int
    truncated: int
    errors: list[dict[str, Any]]
    n_in: int


@dataclass
class Summary:
    """Counts of one run (printed by the CLI; written to ``OUT/_summary.json``)."""

    samples_in: int = 0
    samples_out: int = 0
    tokens: int = 0
    trained_tokens: int = 0
    truncated: int = 0
    dropped_too_long: int = 0
    errors: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    output: str = ""
    errors_file: str = ""
    input: str = ""
    engine: str = "local"
    template: str = ""
    tokenizer: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    parts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        """Rows not written: rejected with an error, or dropped as too long."""
        return self.errors + self.dropped_too_long

    def add_errors(self, errors: Iterable[dict[str, Any]], fh: Any) -> None:
        """Write rejected rows to the errors file ``fh`` and count them by kind and reason."""
        for e in errors:
            fh.write(json.dumps(e, ensure_ascii=False) + "\n")
            if e["kind"] == "dropped_too_long":
                self.dropped_too_long += 1
            else:
                self.errors += 1
                self.reasons[
                    e["reason"].split(":", 1)[0] if e["kind"] == "error" else e["kind"]
                ] += 1

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["reasons"] = dict(self.reasons)
        d["rejected"] = self.rejected
        return d

    def report(self) -> str:
        rate = self.samples_in / self.seconds if self.seconds else 0.0
        lines = [
            f"samples read:     {self.samples_in}",
            f"samples written:  {self.samples_out}  ({self.tokens} tokens, {self.trained_tokens} trained)",
            f"truncated:        {self.truncated}",
            f"dropped too long: {self.dropped_too_long}",
            f"rejected (error): {self.errors}",
        ]
        for reason, n in self.reasons.most_common():
            lines.append(f"  {n:>6}  {reason}")
        lines.append(f"output:           {self.output}  ({len(self.parts)} part files)")
        lines.append(f"errors file:      {self.errors_file}")
        lines.append(f"time:             {self.seconds:.2f} s ({rate:.0f} samples/s)")
        return "\n".join(lines)


# ---------------------------------------------------------------------- the worker side
_CONFIG: TokenizeConfig | None = None


def _init_worker(config: TokenizeConfig, cpus: list[int] | None = None, slots: Any = None) -> None:
    global _CONFIG
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    config.tokenizer.threads = 1
    _CONFIG = config
    _use_system_arrow_pool()  # a worker process: for its whole life
    if cpus and slots is not None:
        with slots.get_lock():  # the n-th worker to start takes the n-th CPU
            slot = slots.value
            slots.value += 1
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpus[slot % len(cpus)]})


def _worker_cpus(workers: int) -> list[int] | None:
    """CPUs to pin the workers to, one each: when the OS supports it and there are enough.

    A worker that the scheduler moves between CPUs loses its warm L2 cache; measured on a
    2-core VM, unpinned workers took 15–35 % more CPU time per chunk than pinned ones.
    """
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is None or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(getaffinity(0))
    return allowed if workers <= len(allowed) else None


def _use_system_arrow_pool() -> Any:
    """Make Arrow allocate with the system allocator; returns the previous pool.

    Arrow's default (mimalloc) hands freed pages back to the OS within milliseconds, so each
    chunk's Parquet encoding page-faults its buffers in again; measured here, that costs
    5–15 % of a worker's time.
    """
    import pyarrow as pa

    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    return previous


@contextlib.contextmanager
def _system_arrow_pool() -> Iterator[None]:
    """The system allocator while the in-process pipeline runs; the previous pool afterwards."""
    import pyarrow as pa

    previous = _use_system_arrow_pool()
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def process_chunk(
    chunk: list[tuple[int, Any]], config: TokenizeConfig | None = None
) -> ChunkResult:
    """Tokenize one chunk of ``(row index, row)`` pairs."""
    cfg = config or _CONFIG
    assert cfg is not None, "worker not initialised"
    errors: list[dict[str, Any]] = []
    convs: list[dict[str, Any]] = []
    rows: list[int] = []
    for index, raw in chunk:
        try:
            record = parse_row(raw)
            convs.append(record_to_conversation(record))
            rows.append(index)
        except ValueError as exc:  # JSON errors and ValidationError
            invalid = isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError, RowTooDeepError))
            kind = "invalid_json" if invalid else "error"
            errors.append({"row": index, "kind": kind, "reason": _reason(exc)})
    policy: dict[str, Any] = {
        "train_on": cfg.train_on,
        "max_length": cfg.max_length,
        "truncation": "right" if cfg.overflow == "truncate" else "error",
        "on_special": cfg.on_special,
        "errors": "return",
        **cfg.options,
    }
    try:
        results: list[Encoding | ChatFmtError] = encode_batch(
            convs, cfg.template, cfg.tokenizer, **policy
        )
    except Exception:  # a bug in one row must not lose the chunk: retry one by one
        results = []
        for conv in convs:
            try:
                results.extend(encode_batch([conv], cfg.template, cfg.tokenizer, **policy))
            except Exception as exc:
                results.append(TokenizationError(_reason(exc)))
    good: list[tuple[int, Encoding]] = []
    for index, res in zip(rows, results):
        if isinstance(res, Encoding):
            good.append((index, res))
        elif isinstance(res, SequenceTooLongError) and cfg.overflow == "drop":
            errors.append({"row": index, "kind": "dropped_too_long", "reason": str(res)})
        else:
            errors.append({"row": index, "kind": "error", "reason": _reason(res)})
    lengths = np.array([len(e) for _, e in good], dtype=np.int64)
    offsets = np.zeros(len(good) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    cat = np.concatenate
    empty = np.zeros(0, dtype=np.int32)
    return ChunkResult(
        rows=np.array([i for i, _ in good], dtype=np.int64),
        offsets=offsets,
        ids=cat([e.ids for _, e in good]).astype(np.int32) if good else empty,
        labels=cat([e.label_array for _, e in good]).astype(np.int32) if good else empty,
        num_trained=np.array([e.num_trained for _, e in good], dtype=np.int64),
        truncated=np.array([e.truncated_from is not None for _, e in good], dtype=bool),
        errors=sorted(errors, key=lambda e: e["row"]),
        n_in=len(chunk),
    )


#: Parquet writer options of the output: token ids are high-cardinality, so no dictionary
#: pages; zstd level 1 keeps files small at little cost (paid in the workers).
WRITE_OPTIONS: dict[str, Any] = {
    "use_dictionary": False,
    "compression": "zstd",
    "compression_level": 1,
}


def write_part(
    part: tuple[int, list[tuple[int, Any]]],
    folder: Path,
    config: TokenizeConfig | None = None,
    chunk_size: int = 64,
) -> PartResult:
    """Tokenize one part ``(index, rows)`` into ``folder/<index>.parquet.tmp``, one row group
    per ``chunk_size`` rows; no file when every row is rejected."""
    import pyarrow.parquet as pq

    index, rows = part
    path = folder / f"{index:09d}.parquet.tmp"
    result = PartResult(None, 0, 0, 0, 0, [], len(rows))
    writer = None
    try:
        for start in range(0, len(rows), chunk_size):
            res = process_chunk(rows[start : start + chunk_size], config)
            result.errors.extend(res.errors)
            if not len(res.rows):
                continue
            if writer is None:
                writer = pq.ParquetWriter(path, OUTPUT_SCHEMA(), **WRITE_OPTIONS)
            writer.write_batch(_record_batch(res), row_group_size=len(res.rows))
            result.rows += len(res.rows)
            result.tokens += len(res.ids)
            result.trained_tokens += int(res.num_trained.sum())
            result.truncated += int(res.truncated.sum())
    finally:
        if writer is not None:
            writer.close()
    result.file = path if writer is not None else None
    return result


# ---------------------------------------------------------------------- the main side
def _parts(
    it: Iterable[tuple[int, Any]],
    size: int,
    total: int | None = None,
    workers: int = 1,
    max_bytes: int | None = None,
) -> Iterator[tuple[int, list[tuple[int, Any]]]]:
    """Numbered parts of consecutive rows: at most ``size`` rows, and at most about
    ``max_bytes`` of raw JSONL lines. With several workers and a known ``total``, parts
    shrink towards the end (guided scheduling: a ``1 / (2 · workers)`` share of the rows
    left, at least ``_MIN_PART``) so that the workers finish together."""
    iterator = iter(it)
    remaining = total if total is not None and workers > 1 else None
    step = size
    for index in count():
        if remaining is not None:
            step = max(_MIN_PART, min(size, -(-remaining // (2 * workers))))
        part: list[tuple[int, Any]] = []
        held = 0
        for row in islice(iterator, step):
            part.append(row)
            if max_bytes is not None and isinstance(row[1], bytes):
                held += len(row[1])
                if held >= max_bytes:
                    break
        if not part:
            return
        if remaining is not None:
            remaining -= len(part)
        yield index, part


#: The smallest part of guided scheduling: the workers finish within one such part of each
#: other, and each part is one more file.
_MIN_PART = 16
#: Rows per part file, and raw JSONL bytes per part (the rows of a part travel to a worker
#: in one message, so this bounds the memory a part holds).
PART_ROWS = 2048
_PART_BYTES = 32 << 20


def _record_batch(res: ChunkResult) -> Any:
    import pyarrow as pa

    offsets = _arrow(res.offsets, np.int32)
    truncated = np.packbits(res.truncated.astype(bool), bitorder="little")
    return pa.RecordBatch.from_arrays(
        [
            _arrow(res.rows, np.int64),
            pa.ListArray.from_arrays(offsets, _arrow(res.ids, np.int32)),
            pa.ListArray.from_arrays(offsets, _arrow(res.labels, np.int32)),
            pa.ListArray.from_arrays(offsets, _arrow(np.ones(len(res.ids)), np.int8)),
            _arrow(np.diff(res.offsets), np.int32),
            _arrow(res.num_trained, np.int32),
            pa.Array.from_buffers(pa.bool_(), len(res.truncated), [None, pa.py_buffer(truncated)]),
        ],
        schema=OUTPUT_SCHEMA(),
    )


def _arrow(values: np.ndarray, dtype: Any) -> Any:
    """A null-free Arrow array of ``values`` as the fixed-width numpy ``dtype``.

    Built from the buffer directly: ``pyarrow.array`` imports pandas (when installed) on its
    first call, ~0.2 s in every new worker process.
    """
    import pyarrow as pa

    data = np.ascontiguousarray(values, dtype=dtype)
    return pa.Array.from_buffers(
        pa.from_numpy_dtype(data.dtype), len(data), [None, pa.py_buffer(data)]
    )


def OUTPUT_SCHEMA() -> Any:
    """The Parquet schema of tokenized output."""
    import pyarrow as pa

    return pa.schema(
        [
            ("row", pa.int64()),
            ("input_ids", pa.list_(pa.int32())),
            ("labels", pa.list_(pa.int32())),
            ("attention_mask", pa.list_(pa.int8())),
            ("num_tokens", pa.int32()),
            ("num_trained", pa.int32()),
            ("truncated", pa.bool_()),
        ]
    )


def tokenize_dataset(
    input_path: str | Path,
    output_path: str | Path,
    *,
    template: str | Template,
    tokenizer: str | Path | Tokenizer,
    workers: int = 1,
    max_length: int | None = None,
    overflow: Overflow | str = "error",
    train_on: str = "all_assistant",
    on_special: str = "text",
    errors_path: str | Path | None = None,
    split: str | None = None,
    chunk_size: int = 64,
    part_rows: int = PART_ROWS,
    progress: bool | None = None,
    options: dict[str, Any] | None = None,
    pin_workers: bool = True,
    overwrite: bool = False,
) -> Summary:
    """Tokenize a dataset into the folder ``output_path``: ``part-00000.parquet`` … (columns
    ``row, input_ids, labels, attention_mask, num_tokens, num_trained, truncated``; rows in
    input order) and ``_summary.json``.

    ``workers`` single-threaded worker processes write the part files, each pinned to its
    own CPU when there are enough (``pin_workers=False`` leaves placement to the OS);
    ``overflow`` for sequences longer than ``max_length``: ``error`` (reject the row),
    ``truncate`` or ``drop``. Rejected and dropped rows go to ``errors_path`` (default
    ``OUT.errors.jsonl`` beside the folder). A non-empty output folder is replaced only with
    ``overwrite``; a run that fails leaves nothing behind.
    """
    from ..api import get_template

    if overflow not in ("error", "truncate", "drop"):
        raise TokenizationError(f"overflow must be error, truncate or drop, got {overflow!r}")
    if overflow != "error" and max_length is None:
        raise TokenizationError(f"overflow={overflow!r} needs max_length")
    started = time.perf_counter()
    src = Path(input_path)
    out, err_path = output_paths(output_path, errors_path)
    check_output(out, err_path, overwrite=overwrite)
    input_kind(src)  # an unknown input type fails here, before any work
    config = TokenizeConfig(
        template=get_template(template),
        tokenizer=load_tokenizer(tokenizer),
        max_length=max_length,
        overflow=overflow,
        train_on=train_on,
        on_special=on_special,
        options=dict(options or {}),
    )
    check_tokenizer(config.template, config.tokenizer)  # a wrong tokenizer: one error, not per row
    summary = Summary(
        output=str(out),
        errors_file=str(err_path),
        input=str(src),
        template=config.template.name,
        tokenizer=str(tokenizer) if isinstance(tokenizer, (str, Path)) else tokenizer.name,
        settings=settings_record(
            {
                "max_length": max_length,
                "overflow": overflow,
                "train_on": train_on,
                "on_special": on_special,
                "options": config.options,
            }
        ),
    )
    files: list[Path] = []
    bar = None
    with staged_output(out, err_path) as staging:
        try:
            # The workers start first, so they are ready while the rows are counted.
            with (
                _part_writer(config, workers, staging.folder, chunk_size, pin_workers) as write,
                staging.errors.open("w", encoding="utf-8") as err_fh,
            ):
                try:
                    total = count_rows(src, split)
                except OSError as exc:
                    raise _unreadable(src, exc) from None
                bar = _progress(total, progress)
                rows = _input_rows(src, split)
                for res in write(_parts(rows, part_rows, total, workers, _PART_BYTES)):
                    if res.file is not None:
                        files.append(res.file)
                    summary.add_errors(res.errors, err_fh)
                    summary.samples_in += res.n_in
                    summary.samples_out += res.rows
                    summary.tokens += res.tokens
                    summary.trained_tokens += res.trained_tokens
                    summary.truncated += res.truncated
                    if bar is not None:
                        bar.update(res.n_in)
            summary.seconds = time.perf_counter() - started
            summary.parts = commit_output(
                staging, out, err_path, files, summary_record(summary), overwrite=overwrite
            )
        except OSError as exc:  # the input's reading errors are DatasetErrors already
            raise DatasetError(f"{out}: cannot write the output ({exc})") from None
        finally:
            if bar is not None:
                bar.close()
    return summary


def _input_rows(src: Path, split: str | None) -> Iterator[tuple[int, Any]]:
    """:func:`read_rows`, with an I/O error reported as the input's :class:`DatasetError`."""
    try:
        yield from read_rows(src, split=split)
    except OSError as exc:
        raise _unreadable(src, exc) from None


def _unreadable(src: Path, exc: OSError) -> DatasetError:
    return DatasetError(f"{src}: cannot read the input ({exc.strerror or exc})")


def summary_record(summary: Summary) -> dict[str, Any]:
    """What ``_summary.json`` holds besides the parts list."""
    record = summary.to_dict()
    del record["parts"]
    return record


def settings_record(policy: dict[str, Any]) -> dict[str, Any]:
    """The encoding settings a summary records (``max_length``, ``overflow``, …)."""
    return json.loads(json.dumps(policy, default=str))


@contextlib.contextmanager
def _part_writer(
    config: TokenizeConfig, workers: int, folder: Path, chunk_size: int, pin: bool = True
) -> Iterator[Callable[[Iterator[tuple[int, list[tuple[int, Any]]]]], Iterator[PartResult]]]:
    """A function mapping parts to :class:`PartResult` in order, writing each part's file:
    in this process for one worker, else on a pool of forked workers (started on entry,
    stopped on exit), each pinned to its own CPU when ``pin`` and there are enough CPUs."""
    if workers <= 1:
        threads = config.tokenizer.threads
        config.tokenizer.threads = 1
        try:
            with _system_arrow_pool():
                yield lambda parts: (write_part(part, folder, config, chunk_size) for part in parts)
        finally:
            config.tokenizer.threads = threads
        return
    method = (
        "fork" if "fork" in mp.get_all_start_methods() and sys.platform != "darwin" else "spawn"
    )
    ctx = mp.get_context(method)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # workers are single-threaded
    import pyarrow.parquet  # noqa: F401 - imported once here, not in every forked worker

    cpus = _worker_cpus(workers) if pin else None
    slots = ctx.Value("i", 0) if cpus else None
    # Forked workers share the parent's objects copy-on-write; frozen objects are skipped by
    # the workers' garbage collector, which would otherwise touch (and copy) every page.
    gc.freeze()
    try:
        pool = ctx.Pool(workers, initializer=_init_worker, initargs=(config, cpus, slots))
    finally:
        gc.unfreeze()
    task = partial(write_part, folder=folder, chunk_size=chunk_size)
    with pool:
        yield lambda parts: pool.imap(task, parts, chunksize=1)


def _progress(total: int | None, progress: bool | None) -> Any:
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="rows", desc="tokenize", file=sys.stderr)
