"""llama.cpp's chat-template cases (tests/test-chat-template.cpp) through ``get_template``.

Each case's template is loaded the way a model ships it (a tokenizer config with
the case's BOS/EOS tokens) and must render ``expected_output_jinja``. Where that
expectation comes from llama.cpp's workaround for templates that drop or reject
system messages, the default render follows the template and the documented
``merge_system_into_first_user=True`` option reproduces llama.cpp.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

import chatfmt
from chatfmt.errors import ChatFmtError
from chatfmt.jinja import MERGE_SYSTEM, JinjaTemplate, recognize

from _support import SHARED

CASES_FILE = SHARED / "reference" / "llamacpp_chat_template_cases.json"


def _cases() -> list[Any]:
    if not CASES_FILE.is_file():
        return []
    data = json.loads(CASES_FILE.read_text(encoding="utf-8"))
    return [
        pytest.param(data["conversation"], case, id=case["name"][:60])
        for case in data["cases"]
        if case.get("expected_output_jinja")
    ]


def _model_dir(tmp_path: Path, case: dict[str, Any]) -> Path:
    config = {
        "chat_template": case["template_source"],
        "bos_token": case["bos_token"],
        "eos_token": case["eos_token"],
    }
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("conversation", "case"), _cases())
def test_case_renders_llamacpp_expectation(
    shared_dir: Path, tmp_path: Path, conversation: list[dict[str, Any]], case: dict[str, Any]
) -> None:
    if not case.get("supported_with_jinja", True):
        pytest.skip(
            "llama.cpp does not render this case through Jinja (supported_with_jinja=false)"
        )
    messages = conversation + case.get("extra_conversation", [])
    expected = case["expected_output_jinja"]
    tpl = chatfmt.get_template(_model_dir(tmp_path, case))
    options: dict[str, Any] = {}
    merges = isinstance(tpl, JinjaTemplate) and not tpl.supports_system_role
    if not isinstance(tpl, JinjaTemplate):
        try:
            default = tpl.render(messages)
        except ChatFmtError:
            default = None
        merges = default != expected and MERGE_SYSTEM in tpl.default_options
    if merges:
        # The template ignores or rejects system messages; llama.cpp merged the system
        # text into the first user turn. The default follows the template...
        with contextlib.suppress(ChatFmtError):
            assert tpl.render(messages) != expected
        options[MERGE_SYSTEM] = True
    out = tpl.render(messages, **options)
    assert out == expected, f"{type(tpl).__name__} {tpl.name!r} differs from llama.cpp"
    segs = tpl.segments(messages, **options)
    assert "".join(s.text for s in segs) == expected


@pytest.mark.parametrize(("conversation", "case"), _cases())
def test_raw_source_recognition_is_sound(
    shared_dir: Path, conversation: list[dict[str, Any]], case: dict[str, Any]
) -> None:
    """A bare source recognized as a native template renders like the source itself."""
    messages = [
        m
        for m in conversation + case.get("extra_conversation", [])
        if m["role"] in ("system", "user", "assistant")
    ]
    tpl = chatfmt.get_template(case["template_source"])
    if isinstance(tpl, JinjaTemplate):
        assert recognize(case["template_source"]).method == "none"
        return
    rec = recognize(case["template_source"])
    assert getattr(tpl, "native", None) is rec.template and rec.method in ("fingerprint", "probe")
    jinja = JinjaTemplate(case["template_source"], variables=dict(rec.tokens or {}))
    try:
        want = jinja.render(messages)
    except ChatFmtError:
        with pytest.raises(ChatFmtError):
            tpl.render(messages)
        return
    assert tpl.render(messages) == want


def test_merge_option_folds_system_into_first_user() -> None:
    src = (
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
    )
    tpl = JinjaTemplate(src)
    msgs = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U"},
        {"role": "assistant", "content": "A"},
    ]
    with pytest.raises(chatfmt.TemplateRenderError) as err:
        tpl.render(msgs)
    assert err.value.index == 0
    assert not tpl.supports_system_role
    assert tpl.render(msgs, merge_system_into_first_user=True) == "[user]S\nU[assistant]A"
    segs = tpl.segments(msgs, merge_system_into_first_user=True)
    contents = [(s.text, s.message) for s in segs if s.kind is chatfmt.Kind.CONTENT]
    assert contents == [("S", 0), ("U", 1), ("A", 2)]
