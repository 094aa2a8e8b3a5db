"""Every official template in ../shared/reference/templates loads through ``get_template(path)``.

Each renders llama.cpp's two template-dir inputs (DEFAULT_JSON and
DEFAULT_JSON_WITH_TOOLS, where a tool call's ``arguments`` is an object). Wherever
transformers' own renderer succeeds, the output is identical to it. Templates
that are recognized as native templates render through the native template where
recognition showed the two alike (else through the Jinja source), and are compared
with transformers given the special tokens recognition inferred.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import chatfmt
from chatfmt.jinja import JinjaTemplate, RecognizedTemplate, recognize
from chatfmt.jinja.packaged import PackagedTemplate
from chatfmt.segments import Kind, join

from _support import SHARED, TEMPLATES

#: the slow tier (`pytest -m "not slow"` leaves it out; CI runs it)
pytestmark = pytest.mark.slow

CASES_FILE = SHARED / "reference" / "llamacpp_chat_template_cases.json"
INPUTS = ("DEFAULT_JSON", "DEFAULT_JSON_WITH_TOOLS")


def _template_files() -> list[str]:
    return sorted(p.name for p in TEMPLATES.glob("*.jinja")) if TEMPLATES.is_dir() else []


def _inputs() -> dict[str, Any]:
    data = json.loads(CASES_FILE.read_text(encoding="utf-8"))
    return data["template_dir_runner_inputs"]  # type: ignore[no-any-return]


def _extra(name: str, inp: dict[str, Any]) -> dict[str, Any]:
    """Variables a template expects from its serving stack (firefunction: functions, datetime)."""
    if "firefunction" in name:
        return {
            "functions": json.dumps(inp.get("tools") or [], indent=2),
            "datetime": "Jul 26 2024 12:00:00 GMT",
        }
    return {}


def _transformers(source: str, inp: dict[str, Any], **variables: Any) -> str | None:
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        rendered, _ = render_jinja_template(
            conversations=[copy.deepcopy(inp["messages"])],
            tools=copy.deepcopy(inp.get("tools")),
            chat_template=source,
            add_generation_prompt=inp["add_generation_prompt"],
            **variables,
        )
    except Exception:
        return None
    return rendered[0]  # type: ignore[no-any-return]


def test_all_reference_templates_are_present(shared_dir: Path) -> None:
    """The folder holds templates, so the per-file tests below cannot pass by running on none."""
    assert _template_files(), f"no .jinja files in {TEMPLATES}"


@pytest.mark.parametrize("name", _template_files())
def test_jinja_backend_renders_reference_template(shared_dir: Path, name: str) -> None:
    """The Jinja backend itself (no recognition) renders every reference template like transformers."""
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    tpl = JinjaTemplate(source, origin=name)
    for key in INPUTS:
        inp = _inputs()[key]
        messages, tools = inp["messages"], inp.get("tools")
        snapshot = copy.deepcopy((messages, tools))
        variables = {
            "bos_token": inp["bos_token"],
            "eos_token": inp["eos_token"],
            **_extra(name, inp),
        }
        out = tpl.render(
            messages, tools=tools, add_generation_prompt=inp["add_generation_prompt"], **variables
        )
        segs = tpl.segments(
            messages, tools=tools, add_generation_prompt=inp["add_generation_prompt"], **variables
        )
        assert join(segs) == out
        content = "".join(s.text for s in segs if s.kind is Kind.CONTENT)
        for m in messages:
            text = m.get("content")
            if isinstance(text, str) and text.strip() in out:
                assert text.strip() in content
        assert any(s.trained for s in segs if s.message == 1)  # the assistant reply is trained
        assert (messages, tools) == snapshot  # inputs are never mutated
        want = _transformers(source, inp, **variables)
        if want is not None:
            assert out == want, f"{name} {key}: differs from transformers"


#: Recognized templates whose native template refuses an input the official file renders by
#: dropping part of it (no silent loss), with the strings the official render loses.
NATIVE_REFUSALS: dict[str, tuple[str, ...]] = {
    "HuggingFaceTB-SmolLM3-3B.jinja": ("test", "hello"),  # the official file drops tool calls
}


@pytest.mark.parametrize("name", _template_files())
def test_reference_template_through_get_template(shared_dir: Path, name: str) -> None:
    """``get_template(path)`` of a recognized template renders exactly what transformers renders.

    The recognized template is the native one where recognition showed them alike and the
    Jinja source elsewhere; it is compared with transformers given the tokens recognition
    inferred (a bare ``.jinja`` file comes without tokenizer).
    """
    path = TEMPLATES / name
    source = path.read_text(encoding="utf-8")
    tpl = chatfmt.get_template(str(path))
    if isinstance(tpl, PackagedTemplate):
        return  # a shipped official file: the Jinja backend renders it (tested above)
    rec = recognize(source)
    assert (rec.template is None) == isinstance(tpl, JinjaTemplate)
    if isinstance(tpl, JinjaTemplate):
        return  # covered by test_jinja_backend_renders_reference_template
    assert isinstance(tpl, RecognizedTemplate) and tpl.native is rec.template
    assert tpl.name == rec.template.name and tpl.tool_parser == rec.template.tool_parser
    tokens = dict(rec.tokens or {})
    for key in INPUTS:
        inp = _inputs()[key]
        extra = _extra(name, inp)
        want = _transformers(source, inp, **tokens, **extra)
        try:
            out = tpl.render(
                inp["messages"],
                tools=inp.get("tools"),
                add_generation_prompt=inp["add_generation_prompt"],
                **extra,
            )
        except chatfmt.ChatFmtError:
            if want is not None:
                lost = NATIVE_REFUSALS.get(name, ())
                assert lost and not any(s in want for s in lost), (
                    f"{name} {key}: {tpl!r} rejects what the official template renders"
                )
            continue
        if want is not None:
            assert out == want, f"{name} {key}: {tpl!r} differs from transformers"
