"""The per-template parser tables of docs/parsing.md (``python tests/_parser_table.py`` rewrites them).

Two generated blocks: every registered template (native and packaged), and every file
in ``../shared/reference/templates`` as ``chatfmt.get_template(path)`` resolves it, with
the count of those whose rendered tool calls parse back (:mod:`_tool_roundtrip`). Tests
compare each block with the docs; the reference block needs ../shared.
"""

from __future__ import annotations

import json
from pathlib import Path

import chatfmt
from _tool_roundtrip import RoundTrip, reference_round_trips
from chatfmt.parsing import base as parsing_base
from chatfmt.parsing import end_of_turn_markers
from chatfmt.parsing.support import ParserSupport, parser_support
from chatfmt.template import Template

DOCS = Path(__file__).resolve().parent.parent / "docs" / "parsing.md"
REGISTRY_BLOCK = ("<!-- parser-table:begin -->", "<!-- parser-table:end -->")
REFERENCE_BLOCK = ("<!-- reference-table:begin -->", "<!-- reference-table:end -->")


def _code(text: str) -> str:
    shown = json.dumps(text, ensure_ascii=False)[1:-1].replace("|", "\\|")
    return f"`{shown}`"


def _parser_cells(s: ParserSupport) -> str:
    tool = f"`{s.tool_parser}`" if s.tool_parser else "`plain`"
    reasoning = f"`{s.reasoning_parser}`" if s.reasoning_parser else "—"
    markers = ", ".join(_code(w) for w in s.end_of_turn) or "—"
    return f"{tool} | {s.tool_parser_origin} | {reasoning} | {markers}"


def _after_marker(tpl: Template) -> str:
    words = end_of_turn_markers(tpl)
    plan = parsing_base._plan(tpl, tpl.tool_parser or "plain", tpl.reasoning_parser, {})
    if not words:
        return "no marker: all output is the message"
    if plan.after:
        return f"{_code(plan.after)} dropped, the rest → `trailing_text`"
    return "→ `trailing_text`"


def registry_table_markdown() -> str:
    """Every registered template: kind, parsers and their origin, end-of-turn markers."""
    rows = [
        "| template | kind | tool parser | origin | reasoning parser | end-of-turn markers "
        "| after the marker |",
        "|---|---|---|---|---|---|---|",
    ]
    for tpl in sorted(chatfmt.list_templates(), key=lambda t: t.name):
        s = parser_support(tpl)
        rows.append(f"| `{tpl.name}` | {s.kind} | {_parser_cells(s)} | {_after_marker(tpl)} |")
    return "\n".join(rows)


def _own_calls(rt: RoundTrip) -> str:
    if not rt.renders_calls:
        return "— (renders no tool calls)"
    return "yes" if rt.parses_own_calls else "no"


def count_line(trips: dict[str, RoundTrip]) -> str:
    """How many reference templates that render tool calls parse their own rendered calls."""
    rendering = [rt for rt in trips.values() if rt.renders_calls]
    parsing = [rt for rt in rendering if rt.parses_own_calls]
    return (
        f"**{len(parsing)} of {len(rendering)}** reference templates whose official form "
        "renders tool calls parse their own rendered calls (native, packaged or derived "
        "parser; checked by `tests/parse/test_reference_tool_roundtrip.py`)."
    )


def reference_table_markdown(folder: Path) -> str:
    """Every reference template file as chatfmt resolves it, and whether its own calls parse back."""
    trips = reference_round_trips(folder)
    rows = [
        count_line(trips),
        "",
        "| file | resolves to | kind | tool parser | origin | reasoning parser "
        "| end-of-turn markers | own calls parse back |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, rt in trips.items():
        s = parser_support(rt.template)
        resolved = "—" if s.kind == "jinja" else f"`{s.template}`"
        rows.append(f"| `{name}` | {resolved} | {s.kind} | {_parser_cells(s)} | {_own_calls(rt)} |")
    return "\n".join(rows)


def docs_block(block: tuple[str, str], text: str | None = None) -> str:
    """The generated text between a block's markers in docs/parsing.md."""
    begin, end = block
    text = DOCS.read_text(encoding="utf-8") if text is None else text
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def write_docs(reference_folder: Path | None) -> None:
    """Rewrite the registry block, and the reference block when ``reference_folder`` is given."""
    text = DOCS.read_text(encoding="utf-8")
    blocks = [(REGISTRY_BLOCK, registry_table_markdown())]
    if reference_folder is not None:
        blocks.append((REFERENCE_BLOCK, reference_table_markdown(reference_folder)))
    for (begin, end), body in blocks:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    DOCS.write_text(text, encoding="utf-8")


if __name__ == "__main__":  # regenerate the tables in docs/parsing.md
    from _support import TEMPLATES

    write_docs(TEMPLATES if TEMPLATES.is_dir() else None)
