"""The same tokenize pipeline on Ray Data, for clusters.

``read_json``/``read_parquet`` → ``map_batches`` (the worker code of
:mod:`chatfmt.data_pipeline.pipeline`) → ``write_parquet`` into a folder. Order is
preserved, so rejected rows get their input index in the errors file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..errors import TokenizationError
from .pipeline import Summary, TokenizeConfig, default_errors_path, process_chunk

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


def _map_batch(batch: Any, template: Any, tokenizer: str, policy: dict[str, Any]) -> Any:
    import numpy as np
    import pyarrow as pa

    rows = batch.to_pylist()
    res = process_chunk(list(enumerate(rows)), _config(template, tokenizer, policy))
    n = len(rows)
    # One output row per input row (order kept): good rows carry tokens, bad rows an error.
    starts = np.zeros(n + 1, dtype=np.int32)
    lengths = np.zeros(n, dtype=np.int32)
    lengths[res.rows] = np.diff(res.offsets)
    np.cumsum(lengths, out=starts[1:])
    ids, labels = res.ids, res.labels  # good rows come in input order
    trained = np.zeros(n, dtype=np.int32)
    trained[res.rows] = res.num_trained
    truncated = np.zeros(n, dtype=bool)
    truncated[res.rows] = res.truncated
    error: list[str | None] = [None] * n
    kind: list[str | None] = [None] * n
    for e in res.errors:
        error[e["row"]] = e["reason"]
        kind[e["row"]] = e["kind"]
    offsets = pa.array(starts)
    return pa.table(
        {
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
) -> Summary:
    """Tokenize ``input_path`` (JSONL or Parquet) on the current Ray cluster into ``output_dir``.

    Calls ``ray.init()`` if Ray is not initialised (connects to ``RAY_ADDRESS`` if set).
    """
    try:
        import ray
        import ray.data
    except ImportError:
        raise TokenizationError("the Ray engine needs: pip install 'chatfmt[ray]'") from None
    if isinstance(tokenizer, (Path, str)):
        tokenizer = str(Path(tokenizer).resolve())
    else:
        raise TokenizationError("the Ray engine needs the tokenizer as a path (workers load it)")
    if overflow != "error" and max_length is None:
        raise TokenizationError(f"overflow={overflow!r} needs max_length")
    started = time.perf_counter()
    src, out = Path(input_path), Path(output_dir)
    err_path = Path(errors_path) if errors_path else default_errors_path(out)
    if not ray.is_initialized():
        ray.init()
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    suffix = src.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        ds = ray.data.read_json(str(src))
    elif suffix in (".parquet", ".pq") or src.is_dir():
        ds = ray.data.read_parquet(str(src))
    else:
        raise TokenizationError(f"{src}: the Ray engine reads .jsonl/.json or Parquet")
    policy = {
        "max_length": max_length,
        "overflow": overflow,
        "train_on": train_on,
        "on_special": on_special,
        "options": dict(options or {}),
    }
    mapped = ds.map_batches(
        _map_batch,  # type: ignore[arg-type]
        batch_format="pyarrow",
        batch_size=batch_size,
        fn_args=(template, tokenizer, policy),
    ).materialize()
    summary = Summary(output=str(out), errors_file=str(err_path))
    index = 0
    with err_path.open("w", encoding="utf-8") as fh:
        for batch in mapped.select_columns(
            ["error", "error_kind", "num_tokens", "num_trained", "truncated"]
        ).iter_batches(batch_format="pyarrow"):
            cols = batch.to_pydict()
            for err, kind, ntok, ntrain, trunc in zip(
                cols["error"],
                cols["error_kind"],
                cols["num_tokens"],
                cols["num_trained"],
                cols["truncated"],
            ):
                if err is None:
                    summary.samples_out += 1
                    summary.tokens += ntok
                    summary.trained_tokens += ntrain
                    summary.truncated += int(trunc)
                else:
                    fh.write(
                        json.dumps({"row": index, "kind": kind, "reason": err}, ensure_ascii=False)
                        + "\n"
                    )
                    if kind == "dropped_too_long":
                        summary.dropped_too_long += 1
                    else:
                        summary.errors += 1
                        summary.reasons[err.split(":", 1)[0]] += 1
                index += 1
    summary.samples_in = index
    good = mapped.filter(lambda row: row["error"] is None).drop_columns(["error", "error_kind"])
    good.write_parquet(str(out))
    summary.seconds = time.perf_counter() - started
    return summary
