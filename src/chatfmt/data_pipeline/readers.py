"""Read dataset rows from JSONL, JSON, Parquet and Hugging Face ``datasets`` folders.

Rows are yielded as ``(index, row)``; JSONL rows stay raw UTF-8 bytes (decoded and parsed
in the workers, which keeps the reading process light), other formats yield dicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ChatFmtError
from ..textfile import read_text


class DatasetError(ChatFmtError):
    """An input dataset that cannot be read at all."""


def input_kind(path: Path) -> str:
    """``jsonl``, ``json``, ``parquet`` or ``hf`` (a ``save_to_disk`` folder)."""
    if path.is_dir():
        if any(
            (path / f).exists() for f in ("dataset_info.json", "state.json", "dataset_dict.json")
        ):
            return "hf"
        if any(path.glob("*.parquet")):
            return "parquet"
        raise DatasetError(
            f"{path}: folder is neither a Hugging Face dataset (save_to_disk) nor Parquet files"
        )
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        with path.open("rb") as fh:
            head = fh.read(64).lstrip()
        return "json" if head.startswith(b"[") else "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise DatasetError(
        f"{path}: unknown dataset type {suffix!r} (use .jsonl, .json, .parquet or a datasets folder)"
    )


#: JSONL files up to this size are counted before tokenizing (a quick extra read).
_JSONL_COUNT_LIMIT = 256 << 20


def count_rows(path: Path, split: str | None = None) -> int | None:
    """Number of rows when cheap to know (Parquet, datasets, JSONL files up to 256 MiB),
    else ``None``."""
    kind = input_kind(path)
    if kind == "jsonl" and path.stat().st_size <= _JSONL_COUNT_LIMIT:
        with path.open("rb") as fh:
            return sum(1 for line in fh if line.strip())  # as read_rows skips blank lines
    if kind == "parquet":
        return sum(open_parquet(f).metadata.num_rows for f in parquet_files(path))
    if kind == "hf":
        return len(load_hf(path, split))
    return None


def read_rows(
    path: Path, *, split: str | None = None, batch_size: int = 256
) -> Iterator[tuple[int, Any]]:
    """``(row index, row)`` pairs; JSONL rows are the raw line (``bytes``, parse with
    :func:`parse_row`)."""
    kind = input_kind(path)
    if kind == "jsonl":
        with path.open("rb") as fh:
            for i, line in enumerate(fh):
                if line.strip():
                    yield i, line
    elif kind == "json":
        yield from enumerate(load_json_array(path))
    elif kind == "parquet":
        index = 0
        for f in parquet_files(path):
            for batch in open_parquet(f).iter_batches(batch_size=batch_size):
                for row in batch.to_pylist():
                    yield index, row
                    index += 1
    else:
        ds = load_hf(path, split)
        for i, row in enumerate(ds):
            yield i, row


def open_parquet(path: Path) -> Any:
    """A ``pyarrow.parquet.ParquetFile``; a file that is not Parquet is a :class:`DatasetError`."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None


def parquet_files(path: Path) -> list[Path]:
    """The Parquet files of a dataset: the file itself, or a folder's ``*.parquet`` in order."""
    return sorted(path.glob("*.parquet")) if path.is_dir() else [path]


def load_json_array(path: Path) -> list[Any]:
    """The rows of a ``.json`` dataset (one JSON array)."""
    try:
        data = json.loads(read_text(path, error=DatasetError))
    except ValueError as exc:
        raise DatasetError(f"{path}: invalid JSON ({exc})") from None
    if not isinstance(data, list):
        raise DatasetError(f"{path}: a .json dataset must be an array of rows")
    return data


class RowTooDeepError(ValueError):
    """A JSON row nested deeper than Python's parser can go."""


def parse_row(raw: Any) -> Any:
    """A row from :func:`read_rows` as an object (JSONL lines are parsed here).

    Raises ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError`` or
    :class:`RowTooDeepError`) for a line that is not one JSON value, so the row is rejected
    alone.
    """
    if isinstance(raw, (bytes, str)):
        try:
            return json.loads(raw)  # UTF-8 is checked here: a bad row fails alone, not the read
        except RecursionError:
            raise RowTooDeepError("JSON nested too deeply to parse") from None
    return raw


def load_hf(path: Path, split: str | None) -> Any:
    """The ``datasets`` Dataset of a ``save_to_disk`` folder (``split`` of a DatasetDict)."""
    try:
        import datasets
    except ImportError:
        raise DatasetError(
            "reading datasets folders needs: pip install 'chatfmt[datasets]'"
        ) from None
    ds = datasets.load_from_disk(str(path))
    if isinstance(ds, datasets.DatasetDict):
        if split is None:
            if len(ds) != 1 and "train" not in ds:
                raise DatasetError(f"{path}: choose a split with --split ({', '.join(ds)})")
            split = "train" if "train" in ds else next(iter(ds))
        if split not in ds:
            raise DatasetError(f"{path}: no split {split!r} ({', '.join(ds)})")
        ds = ds[split]
    return ds
