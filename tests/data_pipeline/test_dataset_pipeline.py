"""Dataset pipeline: readers, ShareGPT conversion, workers, errors file, CLI, Ray, prompt conversion."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import chatfmt
from chatfmt.data_pipeline import (
    PromptParser,
    convert_prompt,
    record_to_conversation,
    sharegpt_to_messages,
    tokenize_dataset,
)
from chatfmt.errors import ValidationError
from chatfmt.tokens import encode, load_tokenizer

from _support import SHARED

QWEN = SHARED / "tokenizers" / "qwen3"


@pytest.fixture(scope="module")
def qwen() -> Path:
    if not QWEN.exists():
        if os.environ.get("CI"):
            raise RuntimeError("qwen3 tokenizer missing in CI")
        pytest.skip(f"reference tokenizer not found at {QWEN}")
    return QWEN


def _rows(n: int = 40) -> list[Any]:
    rows: list[Any] = []
    for i in range(n):
        if i % 2:
            rows.append(
                {
                    "conversations": [
                        {"from": "human", "value": f"q{i}"},
                        {"from": "gpt", "value": "a " * i},
                    ]
                }
            )
        else:
            rows.append(
                {
                    "messages": [
                        {"role": "user", "content": f"q{i}"},
                        {"role": "assistant", "content": "b " * i},
                    ]
                }
            )
    rows[3] = "{not json"
    rows[4] = {"messages": [{"role": "user", "content": "no answer"}]}
    rows[5] = {"text": "neither format"}
    return rows


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def _read(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def test_sharegpt_conversion() -> None:
    msgs = sharegpt_to_messages(
        [
            {"from": "system", "value": "s"},
            {"from": "human", "value": "h"},
            {"from": "function_call", "value": '{"name": "f", "arguments": {"a": 1}}'},
            {"from": "observation", "value": "r"},
            {"from": "gpt", "value": "g"},
        ]
    )
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant"]
    assert msgs[2]["tool_calls"][0]["function"]["name"] == "f"
    conv = record_to_conversation(
        {"conversations": [{"from": "human", "value": "x"}], "system": "S", "tools": "[]"}
    )
    assert conv["messages"][0] == {"role": "system", "content": "S"} and conv["tools"] is None
    with pytest.raises(ValidationError, match="speaker"):
        sharegpt_to_messages([{"from": "alien", "value": "x"}])


def test_jsonl_every_row_accounted_for(tmp_path: Path, qwen: Path) -> None:
    src = _write_jsonl(tmp_path / "in.jsonl", _rows())
    out = tmp_path / "out"
    s = tokenize_dataset(src, out, template="chatml", tokenizer=qwen, progress=False)
    errors = [json.loads(x) for x in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    rows = _read(out)
    assert s.samples_in == 40 and s.samples_out == len(rows) == 37 and s.errors == 3
    assert sorted([e["row"] for e in errors] + [r["row"] for r in rows]) == list(range(40))
    assert {e["row"]: e["kind"] for e in errors} == {3: "invalid_json", 4: "error", 5: "error"}
    tok = load_tokenizer(qwen)
    first = encode(
        [{"role": "user", "content": "q0"}, {"role": "assistant", "content": ""}], "chatml", tok
    )
    assert rows[0]["input_ids"] == first.input_ids and rows[0]["labels"] == first.labels
    assert all(
        len(r["input_ids"]) == len(r["labels"]) == len(r["attention_mask"]) == r["num_tokens"]
        for r in rows
    )


def test_workers_give_the_same_output(tmp_path: Path, qwen: Path) -> None:
    src = _write_jsonl(tmp_path / "in.jsonl", _rows(60))
    tokenize_dataset(src, tmp_path / "one", template="chatml", tokenizer=qwen, progress=False)
    tokenize_dataset(
        src,
        tmp_path / "two",
        template="chatml",
        tokenizer=qwen,
        workers=2,
        chunk_size=8,
        progress=False,
    )
    assert _read(tmp_path / "one") == _read(tmp_path / "two")


def test_output_folder_holds_ordered_parts_and_a_summary(tmp_path: Path, qwen: Path) -> None:
    """Parts named in row order, one schema, a summary that accounts for every row; the
    folder reads back in input order with pyarrow.dataset, pandas and datasets."""
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    from chatfmt.data_pipeline.pipeline import OUTPUT_SCHEMA

    src = _write_jsonl(tmp_path / "in.jsonl", _rows(60))
    out = tmp_path / "out"
    s = tokenize_dataset(
        src, out, template="chatml", tokenizer=qwen, workers=2, part_rows=16, chunk_size=4,
        progress=False,
    )  # fmt: skip
    names = sorted(p.name for p in out.iterdir())
    parts = [n for n in names if n != "_summary.json"]
    assert names == ["_summary.json", *parts] and len(parts) > 2
    assert parts == [f"part-{i:05d}.parquet" for i in range(len(parts))]
    for name in parts:
        assert pq.read_schema(out / name).remove_metadata() == OUTPUT_SCHEMA()
    summary = json.loads((out / "_summary.json").read_text(encoding="utf-8"))
    assert summary["parts"] == [
        {"file": n, "rows": pq.ParquetFile(out / n).metadata.num_rows} for n in parts
    ]
    assert summary["parts"] == s.parts
    rejected = [json.loads(x) for x in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    kept = [i for i in range(60) if i not in {e["row"] for e in rejected}]
    assert (summary["samples_in"], summary["samples_out"], summary["rejected"]) == (
        60, len(kept), len(rejected),
    )  # fmt: skip
    assert sum(p["rows"] for p in summary["parts"]) == len(kept)
    assert summary["reasons"] == {
        "invalid_json": 1,  # row 3
        "TokenizationError": 1,  # row 4: nothing to train on
        "ValidationError": 1,  # row 5: neither messages nor conversations
    }
    assert summary["template"] == "chatml" and summary["tokenizer"] == str(qwen)
    assert summary["settings"]["train_on"] == "all_assistant"
    assert summary["errors_file"] == str(tmp_path / "out.errors.jsonl")
    assert summary == s.to_dict() | {"parts": summary["parts"]}

    assert pads.dataset(out).to_table().column("row").to_pylist() == kept
    pandas = pytest.importorskip("pandas")
    assert pandas.read_parquet(out)["row"].tolist() == kept
    datasets = pytest.importorskip("datasets")
    for loaded in (
        datasets.load_dataset(str(out), split="train"),
        datasets.load_dataset("parquet", data_files=str(out / "*.parquet"), split="train"),
    ):
        assert loaded["row"][:] == kept
        assert loaded[0]["input_ids"] == _read(out)[0]["input_ids"]


def test_parts_past_99999_still_sort_in_order() -> None:
    from chatfmt.data_pipeline.output import part_name

    assert part_name(7, 10) == "part-00007.parquet"
    names = [part_name(i, 100_001) for i in (9, 10, 99_999, 100_000)]
    assert names == sorted(names) and names[-1] == "part-100000.parquet"


def test_output_must_be_a_new_or_previous_output_folder(tmp_path: Path, qwen: Path) -> None:
    from chatfmt.data_pipeline.readers import DatasetError

    src = _write_jsonl(tmp_path / "in.jsonl", _rows(40))

    def run(out: Path, rows: int = 40, **kw: Any) -> Any:
        _write_jsonl(src, _rows(rows))
        return tokenize_dataset(
            src, out, template="chatml", tokenizer=qwen, progress=False, part_rows=8, **kw
        )

    with pytest.raises(
        DatasetError, match=r"folder of Parquet part files.*without the '\.parquet'"
    ):
        run(tmp_path / "train.parquet")
    assert not (tmp_path / "train.parquet").exists()
    with pytest.raises(DatasetError, match="must be outside the output folder"):
        run(tmp_path / "new", errors_path=tmp_path / "new" / "errors.jsonl")
    with pytest.raises(DatasetError, match="name a new folder"):
        run(Path("."), overwrite=True)
    assert not (tmp_path / "new").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(DatasetError, match="not a folder"):
        run(tmp_path / "file", overwrite=True)
    out = tmp_path / "out"
    out.mkdir()
    run(out)  # an existing empty folder is fine
    first = _read(out)
    with pytest.raises(DatasetError, match="not empty; pass --overwrite"):
        run(out, rows=20)
    assert _read(out) == first  # untouched
    run(out, rows=20, overwrite=True)  # fewer parts than before: no stale part survives
    summary = json.loads((out / "_summary.json").read_text())
    assert sorted(p.name for p in out.glob("*.parquet")) == [p["file"] for p in summary["parts"]]
    assert [r["row"] for r in _read(out)] == [r["row"] for r in first if r["row"] < 20]
    (out / "notes.txt").write_text("mine")
    with pytest.raises(DatasetError, match=r"not a tokenize output \(notes.txt\)"):
        run(out, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"


def test_a_failed_run_leaves_nothing_behind(
    tmp_path: Path, qwen: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No errors file, no output folder, no staging files; a previous output stays whole."""
    from chatfmt.data_pipeline import pipeline
    from chatfmt.data_pipeline.readers import DatasetError

    bad_input = tmp_path / "in.txt"
    bad_input.write_text("{}\n")
    with pytest.raises(DatasetError, match="unknown dataset type"):
        tokenize_dataset(bad_input, tmp_path / "a", template="chatml", tokenizer=qwen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]

    src = _write_jsonl(tmp_path / "in.jsonl", _rows(40))
    unreadable = tmp_path / "loop.jsonl"
    unreadable.symlink_to(unreadable)  # reading it fails with ELOOP
    with pytest.raises(DatasetError, match="cannot read the input"):
        tokenize_dataset(unreadable, tmp_path / "b", template="chatml", tokenizer=qwen)
    unreadable.unlink()
    with pytest.raises(DatasetError, match="cannot create the output"):
        tokenize_dataset(src, tmp_path / "in.jsonl" / "out", template="chatml", tokenizer=qwen)
    out = tmp_path / "out"
    tokenize_dataset(src, out, template="chatml", tokenizer=qwen, progress=False)
    before = sorted(tmp_path.iterdir()), _read(out)
    calls = 0
    add_errors = pipeline.Summary.add_errors

    def interrupted(self: Any, errors: Any, fh: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt
        add_errors(self, errors, fh)

    monkeypatch.setattr(pipeline.Summary, "add_errors", interrupted)
    for workers in (1, 2):
        calls = 0
        with pytest.raises(KeyboardInterrupt):
            tokenize_dataset(
                src, out, template="chatml", tokenizer=qwen, workers=workers, part_rows=8,
                overwrite=True, progress=False,
            )  # fmt: skip
        assert (sorted(tmp_path.iterdir()), _read(out)) == before


def test_guided_parts_shrink_towards_the_end_and_keep_every_row() -> None:
    from chatfmt.data_pipeline.pipeline import _MIN_PART, _parts

    rows = [(i, f"r{i}") for i in range(1000)]

    def sizes(*args: Any, **kwargs: Any) -> list[int]:
        parts = list(_parts(iter(rows), *args, **kwargs))
        assert [index for index, _ in parts] == list(range(len(parts)))  # numbered in order
        assert [r for _, part in parts for r in part] == rows  # every row, in order, once
        return [len(part) for _, part in parts]

    guided = sizes(64, total=1000, workers=2)
    assert guided[0] == 64 and max(guided) == 64
    assert guided[-2] == _MIN_PART  # the tail is small, so the workers finish together
    assert all(a >= b for a, b in itertools.pairwise(guided))  # never grows again
    # One worker, or an unknown total: fixed-size parts.
    assert set(sizes(100, total=1000, workers=1)) == {100}
    assert sizes(600) == [600, 400]
    # A total that undercounts (rows appended meanwhile) still yields everything.
    assert sum(sizes(64, total=10, workers=2)) == 1000


def test_parts_of_raw_lines_are_bounded_in_bytes() -> None:
    from chatfmt.data_pipeline.pipeline import _parts

    lines = [(i, b"x" * 10) for i in range(100)]
    parts = [part for _, part in _parts(iter(lines), 64, max_bytes=35)]
    assert [len(p) for p in parts] == [4] * 25  # 40 bytes reach the 35-byte bound
    assert [r for p in parts for r in p] == lines


def test_count_rows_counts_jsonl_rows_as_read(tmp_path: Path) -> None:
    from chatfmt.data_pipeline.readers import count_rows, read_rows

    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"a": 1}\n\n  \n{"a": 2}\n{"a": 3}')  # blank lines, no final newline
    assert count_rows(src) == len(list(read_rows(src))) == 3


def _pinned_probe(config: Any, cpus: list[int], slots: Any, queue: Any) -> None:
    from chatfmt.data_pipeline.pipeline import _init_worker

    _init_worker(config, cpus, slots)
    queue.put(sorted(os.sched_getaffinity(0)))


def test_workers_are_pinned_one_cpu_each(qwen: Path) -> None:
    import multiprocessing as mp

    from chatfmt.data_pipeline.pipeline import TokenizeConfig, _worker_cpus

    if not hasattr(os, "sched_setaffinity"):
        assert _worker_cpus(2) is None
        pytest.skip("no CPU affinity on this OS")
    allowed = sorted(os.sched_getaffinity(0))
    assert _worker_cpus(len(allowed) + 1) is None  # more workers than CPUs: no pinning
    cpus = _worker_cpus(min(2, len(allowed)))
    assert cpus == allowed
    ctx = mp.get_context("fork")
    slots, queue = ctx.Value("i", 0), ctx.Queue()
    config = TokenizeConfig(template=chatfmt.get_template("chatml"), tokenizer=load_tokenizer(qwen))
    seen = []
    for _ in range(2):
        proc = ctx.Process(target=_pinned_probe, args=(config, cpus, slots, queue))
        proc.start()
        seen.append(queue.get(timeout=60))
        proc.join(timeout=60)
    assert slots.value == 2
    assert seen == [[allowed[0]], [allowed[1 % len(allowed)]]]
    assert sorted(os.sched_getaffinity(0)) == allowed  # the parent is never pinned


def test_part_writing_does_not_import_pandas(tmp_path: Path, qwen: Path) -> None:
    """pyarrow.array() imports pandas on first use (~0.2 s per worker); the pipeline avoids it."""
    import subprocess
    import sys

    code = f"""
import json, sys
import chatfmt
from pathlib import Path
from chatfmt.data_pipeline.pipeline import TokenizeConfig, write_part
from chatfmt.tokens import load_tokenizer
cfg = TokenizeConfig(template=chatfmt.get_template("chatml"), tokenizer=load_tokenizer({str(qwen)!r}))
row = json.dumps({{"messages": [{{"role": "user", "content": "q"}}, {{"role": "assistant", "content": "a"}}]}})
out = write_part((0, [(0, row.encode())]), Path({str(tmp_path)!r}), cfg)
assert out.rows == 1 and out.file.stat().st_size
print("pandas" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_row_that_is_not_utf8_is_rejected_alone(tmp_path: Path, qwen: Path) -> None:
    good = json.dumps(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    ).encode()
    bad = b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}'
    src = tmp_path / "in.jsonl"
    src.write_bytes(good + b"\n" + bad + b"\n" + good + b"\n")
    s = tokenize_dataset(src, tmp_path / "o", template="chatml", tokenizer=qwen, progress=False)
    errors = [json.loads(x) for x in (tmp_path / "o.errors.jsonl").read_text().splitlines()]
    assert (s.samples_in, s.samples_out, s.errors) == (3, 2, 1)
    assert errors[0]["row"] == 1 and "UnicodeDecodeError" in errors[0]["reason"]
    assert errors[0]["kind"] == "invalid_json"
    assert [r["row"] for r in _read(tmp_path / "o")] == [0, 2]


def test_rows_of_any_shape_are_rejected_alone_with_their_reason(tmp_path: Path, qwen: Path) -> None:
    """Not objects, wrong types, JSON too deep for Python's parser: each row fails alone."""
    ok = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    lines = [
        "[1, 2]",
        "null",
        '{"messages": "str"}',
        '{"messages": [{"role": "user", "content": 5}]}',
        '{"messages": [' + "[" * 5000 + "]" * 5000 + "]}",
        json.dumps(ok),
        "1e999",
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    s = tokenize_dataset(src, tmp_path / "o", template="chatml", tokenizer=qwen, progress=False)
    errors = {e["row"]: e for e in map(json.loads, (tmp_path / "o.errors.jsonl").open())}
    assert (s.samples_in, s.samples_out, s.errors) == (7, 1, 6)
    assert sorted(errors) == [0, 1, 2, 3, 4, 6]
    assert errors[4]["kind"] == "invalid_json" and "too deeply" in errors[4]["reason"]
    assert "messages[0].content" in errors[3]["reason"]
    assert "must be an object" in errors[0]["reason"]


def test_max_length_truncate_and_drop(tmp_path: Path, qwen: Path) -> None:
    src = _write_jsonl(tmp_path / "in.jsonl", _rows())
    s = tokenize_dataset(
        src,
        tmp_path / "t",
        template="chatml",
        tokenizer=qwen,
        max_length=20,
        overflow="truncate",
        progress=False,
    )
    assert s.truncated > 0 and all(r["num_tokens"] <= 20 for r in _read(tmp_path / "t"))
    s = tokenize_dataset(
        src,
        tmp_path / "d",
        template="chatml",
        tokenizer=qwen,
        max_length=20,
        overflow="drop",
        progress=False,
    )
    dropped = [json.loads(x) for x in (tmp_path / "d.errors.jsonl").read_text().splitlines()]
    assert s.dropped_too_long == sum(e["kind"] == "dropped_too_long" for e in dropped) > 0
    assert s.samples_out + s.dropped_too_long + s.errors == s.samples_in
    s = tokenize_dataset(
        src,
        tmp_path / "e",
        template="chatml",
        tokenizer=qwen,
        max_length=20,
        progress=False,
    )
    assert s.dropped_too_long == 0 and s.errors > 3  # too long rows are rejected with a reason


def test_parquet_and_hf_datasets_input(tmp_path: Path, qwen: Path) -> None:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    good = [
        r for r in _rows(10) if isinstance(r, dict) and "messages" in r and len(r["messages"]) == 2
    ]
    pq.write_table(pa.Table.from_pylist(good), tmp_path / "in.parquet")
    s = tokenize_dataset(
        tmp_path / "in.parquet",
        tmp_path / "p",
        template="chatml",
        tokenizer=qwen,
        progress=False,
    )
    assert s.samples_out == len(good)
    datasets.Dataset.from_list(good).save_to_disk(str(tmp_path / "hf"))
    s2 = tokenize_dataset(
        tmp_path / "hf", tmp_path / "h", template="chatml", tokenizer=qwen, progress=False
    )
    assert _read(tmp_path / "p") == _read(tmp_path / "h") and s2.samples_out == len(good)


def test_cli_tokenize_exit_status(tmp_path: Path, qwen: Path) -> None:
    """1 when no row was written (said in one line), 2 when the run failed (nothing left)."""
    from chatfmt.cli import app

    runner = CliRunner()

    def tokenize(src: Path, out: str, *extra: str) -> Any:
        args = ["tokenize", str(src), "-t", "chatml", "--tokenizer", str(qwen), "-o", out]
        return runner.invoke(app, [*args, *extra])

    bad = _write_jsonl(tmp_path / "bad.jsonl", ["{no", {"text": "x"}])
    res = tokenize(bad, str(tmp_path / "bad"))
    assert res.exit_code == 1
    assert res.stderr.strip().splitlines() == [
        f"error: no rows were written: all 2 rows were rejected (see {tmp_path / 'bad.errors.jsonl'})"
    ]
    assert len((tmp_path / "bad.errors.jsonl").read_text().splitlines()) == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    res = tokenize(empty, str(tmp_path / "empty"))
    assert res.exit_code == 1 and "the input has no rows" in res.stderr

    good = _write_jsonl(tmp_path / "in.jsonl", _rows(10))
    res = tokenize(good, str(tmp_path / "x"), "--tokenizer", str(tmp_path / "missing"))
    assert res.exit_code == 2 and res.stderr.startswith("error: ")
    assert not list(tmp_path.glob("x*")) and not list(tmp_path.glob(".x*"))
    res = tokenize(good, str(tmp_path / "x.parquet"))
    assert res.exit_code == 2 and "name a folder without the '.parquet' suffix" in res.stderr
    assert tokenize(good, str(tmp_path / "x")).exit_code == 0
    res = tokenize(good, str(tmp_path / "x"))
    assert res.exit_code == 2 and "--overwrite" in res.stderr
    assert tokenize(good, str(tmp_path / "x"), "--overwrite").exit_code == 0


def test_cli_tokenize_and_convert(tmp_path: Path, qwen: Path) -> None:
    from chatfmt.cli import app

    src = _write_jsonl(tmp_path / "in.jsonl", _rows())
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "tokenize",
            str(src),
            "--template",
            "chatml",
            "--tokenizer",
            str(qwen),
            "-o",
            str(tmp_path / "o"),
            "--max-length",
            "30",
            "--drop",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["samples_in"] == 40 and summary["errors"] == 3
    unpinned = [
        "tokenize", str(src), "-t", "chatml", "--tokenizer", str(qwen), "-o",
        str(tmp_path / "u"), "-j", "2", "--no-pin", "--json",
    ]  # fmt: skip
    res = runner.invoke(app, unpinned)
    assert res.exit_code == 0, res.output
    tokenize_dataset(src, tmp_path / "one", template="chatml", tokenizer=qwen)
    assert _read(tmp_path / "u") == _read(tmp_path / "one")
    assert json.loads(res.output)["samples_out"] == 37
    res = runner.invoke(
        app,
        [
            "tokenize",
            str(src),
            "-t",
            "chatml",
            "--tokenizer",
            str(qwen),
            "-o",
            str(tmp_path / "x"),
            "--truncate",
        ],
    )
    assert res.exit_code == 2 and "--max-length" in res.output
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo\nman"}]
    prompts = tmp_path / "prompts.jsonl"
    _write_jsonl(
        prompts,
        [
            {"text": chatfmt.render(msgs, "chatml", add_generation_prompt=False), "id": 1},
            {"text": "garbage", "id": 2},
        ],
    )
    res = runner.invoke(
        app,
        [
            "convert",
            str(prompts),
            "--from",
            "chatml",
            "--to",
            "human-assistant",
            "-o",
            str(tmp_path / "conv.jsonl"),
        ],
    )
    assert res.exit_code == 0, res.output
    out = [json.loads(x) for x in (tmp_path / "conv.jsonl").read_text().splitlines()]
    assert out == [
        {"text": chatfmt.render(msgs, "human-assistant", add_generation_prompt=False), "id": 1}
    ]
    assert json.loads((tmp_path / "conv.errors.jsonl").read_text())["row"] == 1


@pytest.mark.parametrize("template", [t.name for t in chatfmt.list_templates()])
def test_prompt_round_trip(template: str) -> None:
    """Templates the parser accepts read their own prompts back exactly."""
    tpl = chatfmt.get_template(template)
    try:
        parser = PromptParser(tpl)
    except chatfmt.ChatFmtError:
        pytest.skip(f"{template}: not a role-marked format the prompt parser covers")
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello\nthere"},
        {"role": "assistant", "content": "Hi!"},
        {"role": "user", "content": "Bye"},
    ]
    for m in (msgs, msgs[1:]):
        try:
            text = tpl.render(m, add_generation_prompt=True)
        except chatfmt.ChatFmtError:
            continue
        parsed, gen = parser.parse(text)
        assert tpl.render(parsed, add_generation_prompt=gen) == text
        assert parsed == m
        assert convert_prompt(text, parser, chatfmt.get_template("chatml")) == chatfmt.render(
            parsed, "chatml", add_generation_prompt=gen
        )


@pytest.mark.parametrize("unit", [1, 7, 30, 64, 1000])
def test_ray_jsonl_ranges_number_lines_as_the_local_reader(tmp_path: Path, unit: int) -> None:
    """Byte ranges cut on line ends give exactly the local reader's numbered lines."""
    from chatfmt.data_pipeline.ray_engine import _jsonl_lines, _jsonl_units
    from chatfmt.data_pipeline.readers import read_rows

    src = tmp_path / "in.jsonl"
    for tail in (b"\n", b""):  # with and without a final newline
        src.write_bytes(b'{"a": 1}\n\n  \n{"b": 2}\r\n{"c": "x\\ny"}\n\n{"d": 4}' + tail)
        want = [(i, line.rstrip(b"\n")) for i, line in read_rows(src)]
        units = _jsonl_units(src, unit)
        got = [(r["__chatfmt_row"], r["__chatfmt_line"]) for u in units for r in _jsonl_lines(u)]
        assert got == want
        assert units[0]["start"] == 0 and units[-1]["end"] == src.stat().st_size


def _engine_outputs(tmp_path: Path, name: str, out: Path) -> tuple[list[Any], list[Any]]:
    """Output rows (read in part-name order) and errors file of one engine's run."""
    errors = [json.loads(x) for x in (tmp_path / f"{name}.errors.jsonl").read_text().splitlines()]
    return _read(out), [(e["row"], e["kind"]) for e in errors]


def _layout(out: Path) -> tuple[list[str], dict[str, Any]]:
    """Part names (each of the output schema), and the summary without what differs between
    runs."""
    import pyarrow.parquet as pq

    from chatfmt.data_pipeline.pipeline import OUTPUT_SCHEMA

    parts = sorted(p.name for p in out.glob("*.parquet"))
    assert all(pq.read_schema(out / p) == OUTPUT_SCHEMA() for p in parts)
    summary = json.loads((out / "_summary.json").read_text(encoding="utf-8"))
    assert [p["file"] for p in summary["parts"]] == parts
    assert sorted(p.name for p in out.iterdir()) == ["_summary.json", *parts]
    run = ("seconds", "output", "errors_file", "engine", "parts")
    return parts, {k: v for k, v in summary.items() if k not in run}


@pytest.mark.slow
def test_ray_engine_matches_the_local_engine(
    tmp_path: Path, qwen: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messy input (invalid JSON, a non-UTF-8 line, blank lines, ShareGPT rows, rows of
    other shapes, content parts) gives the same rows, ids and rejected rows on both engines."""
    ray = pytest.importorskip("ray")
    from chatfmt.data_pipeline.ray_engine import tokenize_dataset_ray

    rows = _rows(30)
    rows[7] = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "parts"}]},
            {"role": "assistant", "content": "ok", "reasoning_content": "r"},
        ]
    }
    src = _write_jsonl(tmp_path / "in.jsonl", rows)
    data = src.read_bytes().split(b"\n")
    data.insert(10, b"")  # blank lines are skipped, and numbered, as the local engine does
    data.insert(12, b'{"messages": [{"role": "user", "content": "\xff"}]}')  # not UTF-8
    src.write_bytes(b"\n".join(data))
    parquet_src = tmp_path / "in.parquet"
    # Parquet needs one type per column: the OpenAI rows with string contents.
    ok_rows = [r for r in rows if isinstance(r, dict) and "messages" in r and r is not rows[7]]
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(ok_rows), parquet_src, row_group_size=5)
    json_src = tmp_path / "in.json"  # an array, with a string row and the content-parts row
    json_src.write_text(json.dumps(rows), encoding="utf-8")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    inputs = [("in", src), ("pq", parquet_src), ("arr", json_src), ("empty", empty)]
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(ok_rows).save_to_disk(str(tmp_path / "hf"))
    inputs.append(("hf", tmp_path / "hf"))
    from chatfmt.data_pipeline import ray_engine

    monkeypatch.setattr(ray_engine, "_JSONL_UNIT", 300)  # several ranges per file
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        for name, path in inputs:
            summary = tokenize_dataset_ray(
                path,
                tmp_path / f"ray-{name}",
                template="chatml",
                tokenizer=qwen,
                batch_size=4,
                errors_path=tmp_path / f"ray-{name}.errors.jsonl",
            )
            local = tokenize_dataset(
                path,
                tmp_path / f"local-{name}",
                template="chatml",
                tokenizer=qwen,
                progress=False,
            )
            got, got_errors = _engine_outputs(tmp_path, f"ray-{name}", tmp_path / f"ray-{name}")
            want, want_errors = _engine_outputs(
                tmp_path, f"local-{name}", tmp_path / f"local-{name}"
            )
            assert got == want  # the same rows, in input order, part after part
            assert got_errors == want_errors
            ray_parts, ray_summary = _layout(tmp_path / f"ray-{name}")
            _, local_summary = _layout(tmp_path / f"local-{name}")
            assert ray_parts == [f"part-{i:05d}.parquet" for i in range(len(ray_parts))]
            assert ray_summary == local_summary
            assert (summary.engine, local.engine) == ("ray", "local")
    finally:
        ray.shutdown()
    kinds = dict(_engine_outputs(tmp_path, "ray-in", tmp_path / "ray-in")[1])
    assert kinds[3] == "invalid_json" and 12 in kinds  # the bad lines, each rejected alone
    assert 10 not in kinds  # the blank line is no sample


# ------------------------------------------------------------------ ShareGPT system column
def test_sharegpt_system_column_and_system_turn() -> None:
    turns = [{"from": "system", "value": "TURN"}, {"from": "human", "value": "hi"}]
    with pytest.raises(ValidationError, match="'system' column and a different system turn"):
        record_to_conversation({"system": "COLUMN", "conversations": turns})
    same = record_to_conversation({"system": "TURN", "conversations": turns})
    assert same["messages"] == [
        {"role": "system", "content": "TURN"},
        {"role": "user", "content": "hi"},
    ]
    col = record_to_conversation({"system": "COLUMN", "conversations": turns[1:]})
    assert col["messages"][0] == {"role": "system", "content": "COLUMN"}
    for empty in ("", None):
        assert (
            record_to_conversation({"system": empty, "conversations": turns})["messages"][0][
                "content"
            ]
            == "TURN"
        )
    with pytest.raises(ValidationError, match="'system' must be a string"):
        record_to_conversation({"system": 5, "conversations": turns[1:]})


def test_sharegpt_conflicting_system_goes_to_errors_file(tmp_path: Path, qwen: Any) -> None:
    rows = [
        {
            "system": "COLUMN",
            "conversations": [
                {"from": "system", "value": "TURN"},
                {"from": "human", "value": "q"},
                {"from": "gpt", "value": "a"},
            ],
        },
        {
            "system": "S",
            "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}],
        },
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    summary = tokenize_dataset(src, out, template="qwen3", tokenizer=qwen, progress=False)
    assert summary.to_dict()["errors"] == 1
    errors = [json.loads(line) for line in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    assert [e["row"] for e in errors] == [0]
    assert "different system turn" in errors[0]["reason"]


# ------------------------------------------------------------------ --train-on none
def test_cli_train_on_help_and_values(tmp_path: Path, qwen: Any) -> None:
    from chatfmt.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["tokenize", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    line = next(ln for ln in res.output.splitlines() if "--train-on" in ln)
    idx = res.output.index(line)
    assert "none" in res.output[idx : idx + 400]
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": "q"}]}) + "\n")
    base = ["tokenize", str(src), "-t", "qwen3", "--tokenizer", str(QWEN), "--no-progress"]
    bad = runner.invoke(app, [*base, "-o", str(tmp_path / "b"), "--train-on", "bogus"])
    assert bad.exit_code == 2 and "none" in bad.output
    ok = runner.invoke(app, [*base, "-o", str(tmp_path / "n"), "--train-on", "none", "--json"])
    assert ok.exit_code == 0, ok.output
    summary = json.loads(ok.output)
    assert summary["samples_out"] == 1 and summary["errors"] == 0
