"""``chatfmt tokenize --report``: one self-contained HTML file about a run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _datasets import QWEN, write_dataset
from chatfmt.cli import app
from chatfmt.data_pipeline.report import BINS, histogram_svg


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    if not QWEN.exists():
        pytest.skip(f"reference tokenizer not found at {QWEN}")
    tmp = tmp_path_factory.mktemp("report")
    data = write_dataset(tmp / "in.jsonl")
    page = tmp / "report.html"
    args = ["tokenize", str(data), "-t", "chatml", "--tokenizer", str(QWEN), "-o", str(tmp / "out")]
    args += ["--max-length", "60", "--drop", "--report", str(page), "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return page.read_text(encoding="utf-8"), page


def test_report_is_self_contained(report: tuple[str, Path]) -> None:
    text, _ = report
    assert "<script" not in text and "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert "<style>" in text


def test_report_counts_rows_by_reason(report: tuple[str, Path]) -> None:
    text, _ = report
    counts = dict(re.findall(r"<tr><th>([^<]+)</th><td>([\d,]+)</td></tr>", text))
    assert counts["rows read"] == "31"
    written, dropped = int(counts["rows written"]), int(counts["dropped: too long"])
    assert dropped > 0 and written + dropped + int(counts["rejected with an error"]) == 31
    assert counts["rejected with an error"] == "1"


def test_report_histogram_and_coloured_samples(report: tuple[str, Path]) -> None:
    text, _ = report
    assert text.count('class="bar"') == BINS
    samples = re.findall(r'<div class="sample">(.*?)</div>', text, re.S)
    assert len(samples) == 10
    trained = "".join(
        re.findall(r'<span class="tok trained" title="id \d+">([^<]*)</span>', samples[1])
    )
    assert "word" in trained  # the assistant reply is trained
    assert '<span class="tok control" title="id 151644">&lt;|im_start|&gt;</span>' in samples[0]


def test_histogram_of_nothing_says_so() -> None:
    assert "no rows were written" in histogram_svg([])
