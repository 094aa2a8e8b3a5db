"""A self-contained HTML report of a tokenize run (``chatfmt tokenize --report out.html``).

One file, no scripts, no external resources: the run's counts, rows not written by reason
(dropped as too long, rejected with an error), a token-length histogram of the written
rows (an inline SVG), and the first samples drawn token by token — control tokens, trained
tokens (the loss mask) and the rest in different colours, each token's id in its tooltip.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..tokens.encode import IGNORE_INDEX
from .pipeline import Summary

#: Bars of the length histogram.
BINS = 20

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1d1f23; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
td, th { border: 1px solid #cfd4da; padding: .2rem .6rem; text-align: left; font-size: .9rem; }
.sample { font-family: ui-monospace, monospace; font-size: .8rem; line-height: 1.7;
  border: 1px solid #cfd4da; border-radius: 6px; padding: .5rem; margin: .5rem 0; white-space: pre-wrap; }
.tok { border-radius: 2px; }
.tok.control { background: #fde2b8; }
.tok.trained { background: #c9f2c7; border-bottom: 2px solid #2e7d32; }
.legend span { padding: 0 .4rem; margin-right: .5rem; border: 1px solid #ccc; }
svg text { font-size: 10px; fill: #333; }
"""


def lengths_and_samples(
    output: Path, n_samples: int
) -> tuple[list[int], list[tuple[list[int], list[int]]]]:
    """Token lengths of every written row, and the ids and labels of the first ``n_samples``."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    lengths: list[int] = []
    samples: list[tuple[list[int], list[int]]] = []
    for part in sorted(output.glob("part-*.parquet")):
        columns = ["input_ids", "labels"] if len(samples) < n_samples else ["input_ids"]
        table = pq.read_table(part, columns=[c for c in columns if c in pq.read_schema(part).names])
        lengths.extend(pc.list_value_length(table["input_ids"]).to_pylist())
        if len(samples) < n_samples:
            ids = table["input_ids"].to_pylist()
            labels = table["labels"].to_pylist() if "labels" in table.column_names else None
            for i in range(min(n_samples - len(samples), len(ids))):
                samples.append(
                    (ids[i], labels[i] if labels is not None else [IGNORE_INDEX] * len(ids[i]))
                )
    return lengths, samples


def histogram_svg(lengths: Sequence[int], bins: int = BINS) -> str:
    """An SVG bar chart of ``lengths`` (one ``<rect class="bar">`` per bin)."""
    width, height, pad = 640, 220, 30
    if not lengths:
        return '<p class="empty">no rows were written</p>'
    low, high = min(lengths), max(lengths)
    step = max(1, -(-(high - low + 1) // bins))
    counts = [0] * bins
    for n in lengths:
        counts[min(bins - 1, (n - low) // step)] += 1
    top = max(counts)
    bar_w = (width - 2 * pad) / bins
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="token-length histogram">'
    ]
    for i, count in enumerate(counts):
        h = 0 if not top else (height - 2 * pad) * count / top
        x = pad + i * bar_w
        lo = low + i * step
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{height - pad - h:.1f}" width="{bar_w - 2:.1f}" '
            f'height="{h:.1f}" fill="#4f83cc"><title>{lo}–{lo + step - 1} tokens: {count} rows</title></rect>'
        )
    parts.append(f'<text x="{pad}" y="{height - 8}">{low}</text>')
    parts.append(f'<text x="{width - pad}" y="{height - 8}" text-anchor="end">{high} tokens</text>')
    parts.append(f'<text x="{pad}" y="{pad - 10}">{top} rows</text>')
    parts.append("</svg>")
    return "".join(parts)


def sample_html(ids: Sequence[int], labels: Sequence[int], tokenizer: Any) -> str:
    """One sample as spans: ``tok control`` / ``tok trained`` / ``tok``, id in the title."""
    special = set(getattr(tokenizer, "special_tokens", {}).values())
    out = []
    for tid, label in zip(ids, labels):
        classes = ["tok"]
        if tid in special:
            classes.append("control")
        if label != IGNORE_INDEX:
            classes.append("trained")
        text = html.escape(tokenizer.token_text(int(tid)))
        out.append(f'<span class="{" ".join(classes)}" title="id {tid}">{text}</span>')
    return '<div class="sample">' + "".join(out) + "</div>"


def write_report(
    summary: Summary, output: Path, tokenizer: Any, path: Path, *, n_samples: int = 10
) -> Path:
    """Write the HTML report of the run that wrote ``output`` (see module doc); returns ``path``."""
    from ..tokens import load_tokenizer

    tok = load_tokenizer(tokenizer)
    lengths, samples = lengths_and_samples(output, n_samples) if output.is_dir() else ([], [])
    rows = [
        ("rows read", summary.samples_in),
        ("rows written", summary.samples_out),
        ("tokens written", summary.tokens),
        ("trained tokens", summary.trained_tokens),
        ("truncated", summary.truncated),
        ("dropped: too long", summary.dropped_too_long),
        ("rejected with an error", summary.errors),
    ]
    reasons = sorted(summary.reasons.items(), key=lambda kv: -kv[1])
    e = html.escape
    body = [
        f"<h1>chatfmt tokenize report</h1><p>{e(summary.input)} → {e(summary.output)} · "
        f"template <code>{e(summary.template)}</code> · tokenizer <code>{e(summary.tokenizer)}</code></p>",
        '<h2>Rows</h2><table id="counts">'
        + "".join(f"<tr><th>{e(k)}</th><td>{v:,}</td></tr>" for k, v in rows)
        + "</table>",
        '<h2>Not written, by reason</h2><table id="reasons">'
        + (
            "".join(f"<tr><th>{e(k)}</th><td>{v:,}</td></tr>" for k, v in reasons)
            if reasons
            else "<tr><td>none</td></tr>"
        )
        + (
            f"<tr><th>too long (dropped)</th><td>{summary.dropped_too_long:,}</td></tr>"
            if summary.dropped_too_long
            else ""
        )
        + f"</table><p>Each row not written is in <code>{e(summary.errors_file)}</code> with its reason.</p>",
        f"<h2>Token lengths ({len(lengths):,} rows)</h2>" + histogram_svg(lengths),
        f'<h2>First {len(samples)} samples</h2><p class="legend"><span class="tok control">control</span>'
        '<span class="tok">content</span><span class="tok trained">trained</span></p>'
        + "".join(sample_html(ids, labels, tok) for ids, labels in samples),
    ]
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>chatfmt tokenize report</title><style>{_STYLE}</style></head><body>"
        + "".join(body)
        + "</body></html>"
    )
    path.write_text(page, encoding="utf-8")
    return path
