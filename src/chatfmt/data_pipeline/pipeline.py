"""Tokenize a chat dataset to Parquet with parallel workers; nothing is dropped silently.

Every input row ends in exactly one place: the output (``row`` column keeps its
index) or the errors file (JSONL ``{"row", "reason", "kind"}``), and the summary
counts both.
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
from itertools import islice
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import ChatFmtError, TokenizationError
from ..template import Template
from ..tokens.control import check_tokenizer
from ..tokens.encode import Encoding, SequenceTooLongError, encode_batch
from ..tokens.tokenizer import Tokenizer, load_tokenizer
from .parquet_concat import ParquetConcatWriter
from .readers import RowTooDeepError, count_rows, parse_row, read_rows
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
class EncodedChunk:
    """A chunk as the local pipeline's workers return it: its rows already Parquet-encoded.

    Encoding and compressing in the workers leaves the parent only appending bytes, so the
    parent is not the bottleneck when several workers run (see :mod:`.parquet_concat`).
    """

    parquet: bytes | None
    rows: int
    tokens: int
    trained_tokens: int
    truncated: int
    errors: list[dict[str, Any]]
    n_in: int


@dataclass
class Summary:
    """Counts of one run (printed by the CLI)."""

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

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["reasons"] = dict(self.reasons)
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
        lines.append(f"output:           {self.output}")
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


def encode_chunk(
    chunk: list[tuple[int, Any]], config: TokenizeConfig | None = None
) -> EncodedChunk:
    """Tokenize one chunk and encode its good rows as a complete Parquet file (in memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    res = process_chunk(chunk, config)
    data = None
    if len(res.rows):
        sink = pa.BufferOutputStream()
        pq.write_table(
            pa.Table.from_batches([_record_batch(res)]),
            sink,
            row_group_size=len(res.rows),
            **WRITE_OPTIONS,
        )
        data = sink.getvalue().to_pybytes()
    return EncodedChunk(
        parquet=data,
        rows=len(res.rows),
        tokens=len(res.ids),
        trained_tokens=int(res.num_trained.sum()),
        truncated=int(res.truncated.sum()),
        errors=res.errors,
        n_in=res.n_in,
    )


# ---------------------------------------------------------------------- the main side
def _chunks(
    it: Iterable[tuple[int, Any]], size: int, total: int | None = None, workers: int = 1
) -> Iterator[list[tuple[int, Any]]]:
    """Chunks of at most ``size`` rows; with several workers and a known ``total``, chunks
    shrink towards the end (guided scheduling: a ``1 / (2 · workers)`` share of the rows left)
    so that the workers finish together instead of one waiting for the other's last chunk."""
    iterator = iter(it)
    remaining = total if total is not None and workers > 1 else None
    step = size
    while True:
        if remaining is not None:
            step = max(_MIN_CHUNK, min(size, -(-remaining // (2 * workers))))
        chunk = list(islice(iterator, step))
        if not chunk:
            return
        if remaining is not None:
            remaining -= len(chunk)
        yield chunk


#: The smallest chunk of guided scheduling (below it, per-chunk overhead dominates).
_MIN_CHUNK = 4


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


def default_errors_path(output: Path) -> Path:
    """``OUT.errors.jsonl`` beside the output (its suffix replaced)."""
    name = output.name
    for suffix in (".parquet", ".pq", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return output.with_name(name + ".errors.jsonl")


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
    progress: bool | None = None,
    options: dict[str, Any] | None = None,
    pin_workers: bool = True,
) -> Summary:
    """Tokenize a dataset to Parquet (``row, input_ids, labels, attention_mask, …``).

    ``workers`` single-threaded worker processes, each pinned to its own CPU when there
    are enough (``pin_workers=False`` leaves placement to the OS); ``overflow`` for
    sequences longer than ``max_length``: ``error`` (reject the row), ``truncate`` or
    ``drop``.
    Rejected and dropped rows go to ``errors_path`` (default ``OUT.errors.jsonl``).
    """
    from ..api import get_template

    if overflow not in ("error", "truncate", "drop"):
        raise TokenizationError(f"overflow must be error, truncate or drop, got {overflow!r}")
    if overflow != "error" and max_length is None:
        raise TokenizationError(f"overflow={overflow!r} needs max_length")
    started = time.perf_counter()
    src, out = Path(input_path), Path(output_path)
    err_path = Path(errors_path) if errors_path else default_errors_path(out)
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
    summary = Summary(output=str(out), errors_file=str(err_path))
    bar = None
    out.parent.mkdir(parents=True, exist_ok=True)
    # The workers start first, so they are ready while the rows are counted.
    with (
        _chunk_encoder(config, workers, pin_workers) as encode_all,
        ParquetConcatWriter(out, OUTPUT_SCHEMA(), **WRITE_OPTIONS) as writer,
        err_path.open("w", encoding="utf-8") as err_fh,
    ):
        total = count_rows(src, split)
        bar = _progress(total, progress)
        chunks = _chunks(read_rows(src, split=split), chunk_size, total, workers)
        for res in encode_all(chunks):
            if res.parquet is not None:
                writer.append(res.parquet)
            for e in res.errors:
                err_fh.write(json.dumps(e, ensure_ascii=False) + "\n")
                if e["kind"] == "dropped_too_long":
                    summary.dropped_too_long += 1
                else:
                    summary.errors += 1
                    summary.reasons[
                        e["reason"].split(":", 1)[0] if e["kind"] == "error" else e["kind"]
                    ] += 1
            summary.samples_in += res.n_in
            summary.samples_out += res.rows
            summary.tokens += res.tokens
            summary.trained_tokens += res.trained_tokens
            summary.truncated += res.truncated
            if bar is not None:
                bar.update(res.n_in)
    if bar is not None:
        bar.close()
    summary.seconds = time.perf_counter() - started
    return summary


@contextlib.contextmanager
def _chunk_encoder(
    config: TokenizeConfig, workers: int, pin: bool = True
) -> Iterator[Callable[[Iterator[list[tuple[int, Any]]]], Iterator[EncodedChunk]]]:
    """A function mapping chunks to :class:`EncodedChunk` in order: in this process for one
    worker, else on a pool of forked workers (started on entry, stopped on exit), each pinned
    to its own CPU when ``pin`` and there are enough CPUs."""
    if workers <= 1:
        threads = config.tokenizer.threads
        config.tokenizer.threads = 1
        try:
            with _system_arrow_pool():
                yield lambda chunks: (encode_chunk(chunk, config) for chunk in chunks)
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
    with pool:
        _enlarge_pipes(pool)
        yield lambda chunks: pool.imap(encode_chunk, chunks, chunksize=1)


#: Bytes of pipe buffer for the pool's task and result queues (Linux's default maximum).
_PIPE_BYTES = 1 << 20


def _enlarge_pipes(pool: Any) -> None:
    """Give the pool's task and result pipes 1 MiB buffers (Linux; elsewhere a no-op).

    A chunk is ~1 MB of JSON in and a few hundred KB of Parquet out; through the default
    64 KiB pipes every transfer needs the parent scheduled a dozen times, so on a machine
    whose cores are all busy with workers, the workers sat waiting for it between chunks.
    """
    try:
        import fcntl

        setsize = fcntl.F_SETPIPE_SZ
        for queue in (pool._inqueue, pool._outqueue):
            fcntl.fcntl(queue._writer.fileno(), setsize, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, another Pool, or not allowed
        pass


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
