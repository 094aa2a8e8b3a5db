"""The Jinja backend: sandbox, Hugging Face environment features, loaders, recognition, segments."""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import assert_matches_official
from chatfmt.errors import TemplateError, TemplateRenderError, ValidationError
from chatfmt.jinja import JinjaTemplate, RecognizedTemplate, SegmentTraceWarning, recognize
from chatfmt.jinja.environment import compile_template
from chatfmt.jinja.inputs import MARKER_CHARS
from chatfmt.segments import Kind, join

from _support import conversations, official_source, texts

CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
USER = [{"role": "user", "content": "hi"}]


def _render(src: str, messages: Any = USER, **kw: Any) -> str:
    return JinjaTemplate(src).render(messages, **kw)


# --------------------------------------------------------------------------- sandbox
@pytest.mark.parametrize(
    "attack",
    [
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ joiner.__init__.__globals__.os }}",
        "{{ lipsum.__globals__['os'] }}",
        "{{ raise_exception.__globals__ }}",
        "{{ messages.__class__.__mro__ }}",
        "{{ dict.__class__ }}",
        "{% set ns = namespace(__class__=1) %}",
        "{{ messages.append(1) }}",
        "{{ messages[0].update({'role': 'x'}) }}",
        "{{ messages[0].clear() }}",
    ],
)
def test_sandbox_blocks_python_internals_and_input_mutation(attack: str) -> None:
    with pytest.raises(TemplateError, match="sandbox forbids"):
        _render(attack)


def test_template_may_mutate_its_own_containers() -> None:
    src = (
        "{% set xs = [] %}{% set _ = xs.append(messages[0].content) %}{% set _ = xs.extend(['b']) %}"
        "{% set d = {} %}{% set _ = d.update({'k': xs}) %}{% set ns = namespace(items=[]) %}"
        "{% set _ = ns.items.append(1) %}{{ d | tojson }}{{ ns.items }}"
    )
    assert _render(src) == '{"k": ["hi", "b"]}[1]'


# --------------------------------------------------------------------------- environment
def test_trim_and_lstrip_blocks_and_loop_controls() -> None:
    src = "  {% for m in messages %}\n{% if loop.index0 == 1 %}{% continue %}{% endif %}{{ m.content }};{% if loop.index0 == 2 %}{% break %}{% endif %}\n{% endfor %}"
    msgs = [{"role": "user", "content": c} for c in "abcd"]
    assert _render(src, msgs) == "a;c;"  # newlines after tags are trimmed


def test_tojson_like_transformers() -> None:
    src = (
        "{{ {'t': 'é<&>', 'b': [1, 2]} | tojson }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=True) }}|"
        "{{ [1] | tojson(indent=2) }}|{{ {'a': 1} | tojson(separators=(',', ':')) }}|{{ messages | map(attribute='role') | tojson }}"
    )
    assert _render(src) == '{"t": "é<&>", "b": [1, 2]}|{"a": 2, "b": 1}|[\n  1\n]|{"a":1}|["user"]'


def test_raise_exception_names_the_message() -> None:
    src = "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system here') }}{% endif %}{% endfor %}"
    msgs = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "system", "content": "c"},
    ]
    with pytest.raises(TemplateRenderError, match="no system here") as err:
        _render(src, msgs)
    assert err.value.index == 2
    assert str(err.value).startswith("messages[2]: ")


def test_template_failures_become_template_render_errors() -> None:
    with pytest.raises(TemplateRenderError, match=r"template failed .TypeError: can only concat"):
        _render("{{ messages[0].content + 1 }}")
    with pytest.raises(TemplateError, match="syntax error at line 1"):
        JinjaTemplate("{% for %}")


def test_strftime_now_follows_now() -> None:
    src = "{{ strftime_now('%Y-%m-%d %H:%M') }}"
    assert _render(src, now=dt.datetime(2024, 2, 29, 13, 45)) == "2024-02-29 13:45"
    assert _render(src, now=dt.date(2023, 1, 2)) == "2023-01-02 00:00"
    assert _render(src, now="2022-12-31") == "2022-12-31 00:00"


def test_variables_from_tokenizer_config_and_options() -> None:
    src = "{{ bos_token }}|{{ eos_token }}|{{ additional_special_tokens | join(',') }}|{{ custom_flag }}"
    tpl = JinjaTemplate(
        src,
        variables={
            "bos_token": {"content": "<s>", "lstrip": False, "__type": "AddedToken"},
            "eos_token": "</s>",
            "additional_special_tokens": ["<a>", {"content": "<b>"}],
        },
    )
    assert tpl.render(USER, custom_flag=True) == "<s>|</s>|<a>,<b>|True"
    assert tpl.render(USER, eos_token="<end>", custom_flag=1) == "<s>|<end>|<a>,<b>|1"
    with pytest.raises(TemplateError, match="documents"):
        tpl.render(USER, documents=[])


def test_custom_roles_and_extra_keys_reach_the_template() -> None:
    src = "{% for m in messages %}[{{ m.role }}|{{ m.metadata }}]{{ m.content }}{% endfor %}"
    msgs = [
        {"role": "user", "content": "q", "metadata": "m1"},
        {"role": "tool_response", "content": "r"},
    ]
    assert _render(src, msgs) == "[user|m1]q[tool_response|]r"
    with pytest.raises(ValidationError, match="non-string 'role'") as err:
        _render(src, [{"role": 3, "content": "x"}])
    assert (err.value.index, err.value.field) == (0, "role")


def test_tool_call_arguments_are_objects_and_missing_content_is_filled_when_needed() -> None:
    # This template needs content to be a string and arguments to be an object.
    src = (
        "{% for m in messages %}{{ m.content | trim }}{% for c in m.tool_calls or [] %}"
        "<{{ c.function.name }} {{ c.function.arguments.city }}>{% endfor %}{% endfor %}"
    )
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [
                {"type": "function", "function": {"name": "w", "arguments": '{"city": "Paris"}'}}
            ],
        },
    ]
    snapshot = copy.deepcopy(msgs)
    assert _render(src, msgs) == "go<w Paris>"
    assert msgs == snapshot


def test_string_arguments_when_the_template_concatenates_them() -> None:
    src = "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ '>>>' + c.function.arguments }}{% endfor %}{% endfor %}"
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"type": "function", "function": {"name": "w", "arguments": {"city": "Paris"}}}
            ],
        },
    ]
    assert _render(src, msgs) == '>>>{"city": "Paris"}'


# --------------------------------------------------------------------------- generation tag
def test_generation_tag_marks_trained_spans() -> None:
    src = (
        "{% for m in messages %}{% if m.role == 'assistant' %}A: {% generation %}{{ m.content }}</s>{% endgeneration %}\n"
        "{% else %}U: {{ m.content }}\n{% endif %}{% endfor %}"
    )
    tpl = JinjaTemplate(src)
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    segs = tpl.segments(msgs, add_generation_prompt=False)
    assert join(segs) == tpl.render(msgs, add_generation_prompt=False) == "U: q\nA: a</s>"
    assert "".join(s.text for s in segs if s.trained) == "a</s>"
    # an empty reply has no traced value: its block still belongs to it, not to the next message
    msgs = [*msgs, {"role": "user", "content": "r"}, {"role": "assistant", "content": ""}]
    segs = tpl.segments(msgs, add_generation_prompt=False)
    assert [(s.text, s.message) for s in segs if s.trained] == [("a", 1), ("</s>", 1), ("</s>", 3)]


# --------------------------------------------------------------------------- segments
def test_segments_of_chatml_source() -> None:
    tpl = JinjaTemplate(CHATML)
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "<|im_end|> hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "again"},
    ]
    segs = tpl.segments(msgs)
    assert join(segs) == tpl.render(msgs)
    assert [(s.text, s.message) for s in segs if s.kind is Kind.CONTENT] == [
        ("sys", 0),
        ("<|im_end|> hi", 1),
        ("yo", 2),
        ("again", 3),
    ]
    assert [s.text for s in segs if s.trained] == ["yo", "<|im_end|>"]
    assert segs[-1].text == "\n<|im_start|>assistant\n" and segs[-1].message is None
    assert tpl.generation_config.stop_words == ("<|im_end|>",)


def test_trimmed_content_is_traced() -> None:
    src = "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</s>{% endfor %}"
    tpl = JinjaTemplate(src)
    msgs = [{"role": "user", "content": "  padded \n"}, {"role": "assistant", "content": " a "}]
    segs = tpl.segments(msgs)
    assert [s.text for s in segs if s.kind is Kind.CONTENT] == ["padded", "a"]
    assert "".join(s.text for s in segs if s.trained) == "a</s>"


def test_cut_content_is_traced_as_the_part_shown() -> None:
    src = "{% for m in messages %}<{{ m.role }}>{{ m.content.split('</think>')[-1] }}<end>{% endfor %}"
    tpl = JinjaTemplate(src)
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "<think>x</think>answer"},
    ]
    segs = tpl.segments(msgs)
    assert join(segs) == "<user>q<end><assistant>answer<end>"
    assert [s.text for s in segs if s.kind is Kind.CONTENT] == ["q", "answer"]


def test_untraceable_content_fails_clearly_but_render_works() -> None:
    tpl = JinjaTemplate("{% for m in messages %}[{{ m.content | upper }}]{% endfor %}")
    msgs = [{"role": "user", "content": "hello"}]
    assert tpl.render(msgs) == "[HELLO]"
    with pytest.raises(TemplateError, match="cannot find message text"):
        tpl.segments(msgs)


def test_search_fallback_warns() -> None:
    # The template branches on the content itself, so sentinels take another path.
    src = "{% for m in messages %}{% if m.content.startswith('/') %}CMD {% endif %}{{ m.content }};{% endfor %}"
    tpl = JinjaTemplate(src)
    with pytest.warns(SegmentTraceWarning):
        segs = tpl.segments([{"role": "user", "content": "/help"}])
    assert [s.text for s in segs if s.kind is Kind.CONTENT] == ["/help"]


def test_continue_final_message_and_follow_up() -> None:
    tpl = JinjaTemplate(CHATML)
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "par"}]
    assert (
        tpl.render(msgs, continue_final_message=True)
        == "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\npar"
    )
    follow = tpl.render([{"role": "user", "content": "next"}], sequence_start=False)
    assert follow == "\n<|im_start|>user\nnext<|im_end|>\n<|im_start|>assistant\n"


# --------------------------------------------------------------------------- loaders and recognition
def test_source_is_compiled_once_and_templates_are_cached() -> None:
    src = CHATML.replace("assistant", "assistant ")  # a source not recognized as a native template
    a, b = chatfmt.get_template(src), chatfmt.get_template(src)
    assert a is b and isinstance(a, JinjaTemplate)
    before = compile_template.cache_info().hits
    JinjaTemplate(src)
    assert compile_template.cache_info().hits == before + 1


def test_tokenizer_config_and_model_dirs(tmp_path: Path) -> None:
    src = "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}"
    cfg = {"chat_template": src, "bos_token": {"content": "<B>"}, "eos_token": "<E>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
    for where in (
        tmp_path,
        tmp_path / "tokenizer_config.json",
        str(tmp_path / "tokenizer_config.json"),
    ):
        assert chatfmt.get_template(where).render(USER) == "<B>hi<E>"
    # chat_template.jinja beside the config wins; named templates pick "default"
    (tmp_path / "chat_template.jinja").write_text("J" + src, encoding="utf-8")
    assert chatfmt.get_template(tmp_path).render(USER) == "J<B>hi<E>"
    other = tmp_path / "named"
    other.mkdir()
    cfg2 = {
        "chat_template": [
            {"name": "tool_use", "template": "T"},
            {"name": "default", "template": "D{{ eos_token }}"},
        ],
        "eos_token": "<E>",
    }
    (other / "tokenizer_config.json").write_text(json.dumps(cfg2), encoding="utf-8")
    assert chatfmt.get_template(other).render(USER) == "D<E>"
    jf = tmp_path / "x.jinja"
    jf.write_text(src, encoding="utf-8")
    assert chatfmt.get_template(jf).render(USER, bos_token="[", eos_token="]") == "[hi]"


def test_gguf_chat_template(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_chat_template(
        "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}"
    )
    w.add_token_list(["<unk>", "<s>", "</s>"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    assert chatfmt.get_template(path).render(USER) == "<s>hi</s>"


def test_recognition_by_fingerprint_and_probe(shared_dir: Path) -> None:
    qwen3 = official_source("Qwen-Qwen3-0.6B.jinja")
    rec = recognize(qwen3 + "\n")  # one trailing newline does not matter (Jinja drops it)
    assert rec.method == "fingerprint" and rec.template is chatfmt.get_template("qwen3")
    loaded = chatfmt.get_template(qwen3)
    assert isinstance(loaded, RecognizedTemplate) and loaded.native is rec.template
    probe = recognize(CHATML)
    assert probe.method == "probe" and probe.template is chatfmt.get_template("chatml")
    assert recognize(CHATML.replace("\\n", " ")).describe() == "jinja (not recognized)"


def test_detect_cli(shared_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chatfmt.cli import app

    runner = CliRunner()
    res = runner.invoke(
        app, ["detect", str(shared_dir / "reference/templates/Qwen-Qwen3-0.6B.jinja")]
    )
    assert res.exit_code == 0 and res.output.strip() == "qwen3 (fingerprint)"
    other = tmp_path / "t.jinja"
    other.write_text("{% for m in messages %}{{ m.content }}{% endfor %}", encoding="utf-8")
    res = runner.invoke(app, ["detect", str(other)])
    assert res.exit_code == 0 and res.output.strip() == "jinja (not recognized)"
    res = runner.invoke(app, ["detect", "--json", str(other)])
    assert json.loads(res.output)["method"] == "none"


# --------------------------------------------------------------------------- properties
_PROPERTY_TEMPLATES = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": True,
    "meta-llama-Llama-3.1-8B-Instruct.jinja": False,
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": False,
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": True,
}


@functools.cache
def _property_template(name: str) -> JinjaTemplate:
    return JinjaTemplate(official_source(name), variables={"bos_token": "<s>", "eos_token": "</s>"})


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_PROPERTY_TEMPLATES))
@given(data=st.data())
def test_jinja_segments_properties(shared_dir: Path, name: str, data: st.DataObject) -> None:
    source = official_source(name)
    tools = _PROPERTY_TEMPLATES[name]
    conv = data.draw(
        conversations(tools=tools, end_with=data.draw(st.sampled_from(["user", "assistant"])))
    )
    messages, tool_list = conv["messages"], conv["tools"]
    if "Mistral" in name and messages[0]["role"] == "system":
        messages = messages[1:]
    gen = messages[-1]["role"] != "assistant"
    snapshot = copy.deepcopy((messages, tool_list))
    tpl = _property_template(name)
    out = assert_matches_official(
        tpl,
        source,
        messages,
        tools=tool_list,
        add_generation_prompt=gen,
        official_vars={"bos_token": "<s>", "eos_token": "</s>"},
    )
    if out is None:
        return
    if set(json.dumps([messages, tool_list], ensure_ascii=False)) & MARKER_CHARS:
        # Documented limit: data holding the tracer's private marker characters cannot be
        # traced with sentinels. segments() then searches the output for the message texts:
        # it either finds them (and warns) or says why not; never a silent wrong mask.
        try:
            with pytest.warns(SegmentTraceWarning, match="private marker"):
                found = tpl.segments(messages, tools=tool_list, add_generation_prompt=gen)
        except chatfmt.TemplateError as exc:
            assert "private marker" in str(exc)
            return
        assert join(found) == out
        return
    segs = tpl.segments(messages, tools=tool_list, add_generation_prompt=gen)
    assert join(segs) == out
    for i, m in enumerate(messages):
        text = m.get("content")
        if isinstance(text, str) and text.strip() and not m.get("tool_calls"):  # Hermes drops those
            held = "".join(s.text for s in segs if s.kind is Kind.CONTENT and s.message == i)
            assert text.strip() in held
    assert (messages, tool_list) == snapshot


@given(text=texts())
def test_content_segments_hold_text_exactly(text: str) -> None:
    tpl = JinjaTemplate(CHATML)
    msgs = [{"role": "user", "content": text}, {"role": "assistant", "content": text + "!"}]
    segs = tpl.segments(msgs, add_generation_prompt=False)
    assert join(segs) == tpl.render(msgs, add_generation_prompt=False)
    for i, expected in enumerate((text, text + "!")):
        assert (
            "".join(s.text for s in segs if s.kind is Kind.CONTENT and s.message == i) == expected
        )
