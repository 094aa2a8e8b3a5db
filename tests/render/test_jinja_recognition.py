"""Recognition of Jinja sources as native templates: it never claims a shape it does not match,
and a recognized template takes every variable its source reads, as transformers passes them.
"""

from __future__ import annotations

import copy
import json
import pickle
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import chatfmt
from chatfmt.errors import ChatFmtError, TemplateError
from chatfmt.jinja import JinjaTemplate, RecognizedTemplate, recognize
from chatfmt.jinja.packaged import PackagedTemplate
from chatfmt.jinja.probes import CORE, SHAPED
from chatfmt.jinja.recognize import fingerprint
from chatfmt.jinja.shapes import (
    EMPTY_TOOLS,
    NAMES,
    NULL_CONTENT,
    OTHER_ROLES,
    PARTS,
    REASONING,
    SYSTEM_PLACEMENT,
    TOOL_CALLS,
    TOOLS,
    shapes_of,
)
from chatfmt.protocol import validate_conversation

from _support import TEMPLATES, WEATHER_TOOL, official_render, official_source

QWEN3 = "Qwen-Qwen3-0.6B.jinja"


def _sub(source: str, *pairs: tuple[str, str]) -> str:
    """``source`` with each replacement applied (each must occur, so a variant never goes stale)."""
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return source


_STRING_CONTENT = (
    "{%- if message.content is string %}{%- set content = message.content %}"
    "{%- else %}{%- set content = '' %}{%- endif %}"
)


def qwen3_string_content() -> str:
    """Qwen3 as newer official files write it: non-string content renders as ``''``."""
    return _sub(
        official_source(QWEN3),
        (
            "    {%- set index = (messages|length - 1) - loop.index0 %}\n",
            "    {%- set index = (messages|length - 1) - loop.index0 %}\n    "
            + _STRING_CONTENT
            + "\n",
        ),
        ("not(message.content.startswith(", "not(content.startswith("),
        ("and message.content.endswith(", "and content.endswith("),
        (
            "{%- for message in messages %}\n",
            "{%- for message in messages %}\n    " + _STRING_CONTENT + "\n",
        ),
        (
            "message.role + '\\n' + message.content + '<|im_end|>'",
            "message.role + '\\n' + content + '<|im_end|>'",
        ),
        ("        {%- set content = message.content %}\n", ""),
        ("'</think>' in message.content", "'</think>' in content"),
        (  # reasoning is cut out of the content before the content is cut
            "{%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}\n"
            "                {%- set reasoning_content = message.content.split('</think>')[0]",
            "{%- set reasoning_content = content.split('</think>')[0]",
        ),
        (
            ".split('<think>')[-1].lstrip('\\n') %}\n",
            ".split('<think>')[-1].lstrip('\\n') %}\n"
            "                {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n",
        ),
        ("{{- message.content }}", "{{- content }}"),
    )


def qwen3_without_arguments() -> str:
    """Qwen3 that drops tool-call arguments."""
    return _sub(
        official_source(QWEN3),
        ("{{- tool_call.arguments | tojson }}", "{{- '{}' }}"),
        ("{{- tool_call.arguments }}", "{{- '{}' }}"),
    )


def qwen3_other_reasoning() -> str:
    """Qwen3 that writes reasoning between other tags."""
    return _sub(
        official_source(QWEN3),
        (
            "'\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n'",
            "'\\n<reasoning>' + reasoning_content.strip('\\n') + '</reasoning>\\n'",
        ),
    )


def qwen3_ignoring_thinking_switch() -> str:
    """Qwen3 without the ``enable_thinking=False`` block."""
    return _sub(
        official_source(QWEN3),
        (
            "    {%- if enable_thinking is defined and enable_thinking is false %}",
            "    {%- if false %}",
        ),
    )


def qwen3_late_system_as_user() -> str:
    """Qwen3 that writes a system message after the first one as a user turn."""
    return _sub(
        official_source(QWEN3),
        (
            "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}",
            "{{- '<|im_start|>user\\n' + message.content + '<|im_end|>' + '\\n' }}",
        ),
    )


VARIANTS = {
    "string content": qwen3_string_content,
    "no tool-call arguments": qwen3_without_arguments,
    "other reasoning tags": qwen3_other_reasoning,
    "no thinking switch": qwen3_ignoring_thinking_switch,
    "late system as user": qwen3_late_system_as_user,
}


def _call(name: str, arguments: Any, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


#: Conversations over every shape (each: messages, tools, options).
CONVERSATIONS: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]] = [
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], None, {}),
    (
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Look: "}, {"type": "text", "text": "parts"}],
            }
        ],
        None,
        {},
    ),
    (
        [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [_call("get_current_weather", {"location": "Oslo"}, "a")],
            },
            {"role": "tool", "tool_call_id": "a", "content": "cold"},
            {
                "role": "assistant",
                "content": "It is cold.",
                "reasoning_content": "Look at the result.",
            },
        ],
        [WEATHER_TOOL],
        {},
    ),
    (
        [
            {"role": "user", "content": "Plan"},
            {"role": "assistant", "content": "Done", "reasoning_content": "step by step"},
        ],
        None,
        {},
    ),
    ([{"role": "user", "content": "Quick"}], None, {"enable_thinking": False}),
    (
        [
            {"role": "system", "content": "First"},
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": "Later rule"},
            {"role": "user", "content": "Again"},
        ],
        None,
        {},
    ),
]


# --------------------------------------------------------------------------- probes and shapes
def test_probes_cover_every_shape_and_core_probes_have_none() -> None:
    assert all(p.shapes == frozenset() for p in CORE)
    assert all(p.shapes for p in SHAPED)
    probed = frozenset().union(*(p.shapes for p in SHAPED))
    every = {
        PARTS,
        NULL_CONTENT,
        TOOLS,
        EMPTY_TOOLS,
        TOOL_CALLS,
        REASONING,
        SYSTEM_PLACEMENT,
        NAMES,
    }
    assert every <= probed
    # generation prompt on and off, several and late system messages, string and object arguments
    assert {p.add_generation_prompt for p in CORE} == {True, False}
    args = [
        type(c["function"]["arguments"])
        for p in SHAPED
        for m in p.messages
        for c in m.get("tool_calls") or ()
    ]
    assert {str, dict} <= set(args)
    assert any(len(m.get("tool_calls") or ()) > 1 for p in SHAPED for m in p.messages)


def test_shapes_of_a_call() -> None:
    parts = [{"type": "text", "text": "x"}]
    call = _call("f", "{}", "a")
    assert shapes_of([{"role": "user", "content": "hi"}]) == frozenset()
    assert shapes_of("hi", tools=[]) == {EMPTY_TOOLS}
    assert shapes_of([{"role": "user", "content": parts}], tools=[WEATHER_TOOL]) == {PARTS, TOOLS}
    assert shapes_of([{"role": "user", "content": None}]) == {NULL_CONTENT}
    assert shapes_of([{"role": "user"}]) == {NULL_CONTENT}
    calls = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    assert shapes_of(calls) == {TOOL_CALLS}
    assert shapes_of([calls[0], {"role": "assistant", "tool_calls": [call]}]) == {
        TOOL_CALLS,
        NULL_CONTENT,
    }
    assert shapes_of([{"role": "assistant", "content": "<think>x</think>y"}]) == {REASONING}
    assert shapes_of([{"role": "assistant", "content": "y", "reasoning_content": "x"}]) == {
        REASONING
    }
    assert shapes_of([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]) == {
        SYSTEM_PLACEMENT
    }
    assert shapes_of(
        [{"role": "developer", "content": "a"}, {"role": "user", "content": "b", "name": "n"}]
    ) == {
        OTHER_ROLES,
        NAMES,
    }
    assert shapes_of([{"role": "user", "content": "a"}], options=["enable_thinking"]) == {
        "option:enable_thinking"
    }
    conv = validate_conversation([*calls, {"role": "tool", "content": "r"}], [WEATHER_TOOL])
    assert shapes_of(conv) == {TOOL_CALLS, TOOLS}


def test_fingerprint_is_the_source_as_jinja_reads_it() -> None:
    src = "{% for m in messages %}{{ m.content }} \n{% endfor %}"
    assert fingerprint(src) == fingerprint(src.replace("\n", "\r\n")) == fingerprint(src + "\n")
    # trailing whitespace is output here: a source without it is another template
    assert fingerprint(src) != fingerprint(src.replace(" \n", "\n"))
    assert fingerprint(src + "\n") != fingerprint(src + "\n\n")


# --------------------------------------------------------------------------- item 6: never claim a mismatch
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_perturbed_qwen3_renders_like_transformers(shared_dir: Path, variant: str) -> None:
    source = VARIANTS[variant]()
    tpl = chatfmt.get_template(source)
    for messages, tools, options in CONVERSATIONS:
        try:
            want = official_render(source, messages, tools=tools, **options)
        except Exception:
            continue
        got = chatfmt.render(copy.deepcopy(messages), tpl, tools=tools, **options)
        assert got == want, f"{variant}: {json.dumps(messages)[:200]}"
        if tools is None:
            gen_off = official_render(source, messages, add_generation_prompt=False, **options)
            assert tpl.render(messages, add_generation_prompt=False, **options) == gen_off


def test_string_content_qwen3_keeps_the_native_template_where_it_matches(shared_dir: Path) -> None:
    source = qwen3_string_content()
    tpl = chatfmt.get_template(source)
    assert isinstance(tpl, RecognizedTemplate) and tpl.native is chatfmt.get_template("qwen3")
    rec = recognize(source)
    assert {PARTS} in rec.differs and {NULL_CONTENT} in rec.differs
    assert "text parts" in rec.describe()
    plain = [{"role": "user", "content": "Hi"}]
    assert tpl.backend(plain)[0] is tpl.native
    assert tpl.backend(plain, None, {"enable_thinking": False})[0] is tpl.native
    parts = [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    backend = tpl.backend(parts)[0]
    assert isinstance(backend, JinjaTemplate)
    assert (
        tpl.render(parts)
        == official_render(source, parts)
        == "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n"
    )
    # segments come from the same backend and join to the render
    assert "".join(s.text for s in tpl.segments(parts)) == tpl.render(parts)
    # the native template's parsers stay
    assert (
        tpl.tool_parser == tpl.native.tool_parser
        and tpl.generation_config == tpl.native.generation_config
    )


@pytest.mark.parametrize("variant", ["no tool-call arguments", "other reasoning tags"])
def test_variants_that_differ_in_the_natives_own_features_are_not_recognized(
    shared_dir: Path, variant: str
) -> None:
    source = VARIANTS[variant]()
    assert recognize(source).template is None
    assert isinstance(chatfmt.get_template(source), JinjaTemplate)


def test_an_option_the_source_does_not_read_is_ignored(shared_dir: Path) -> None:
    source = qwen3_ignoring_thinking_switch()
    tpl = chatfmt.get_template(source)
    assert isinstance(tpl, RecognizedTemplate)
    msgs = [{"role": "user", "content": "Hi"}]
    assert tpl.backend(msgs, None, {"enable_thinking": False}) == (tpl.native, {})
    assert tpl.render(msgs, enable_thinking=False) == official_render(
        source, msgs, enable_thinking=False
    )
    assert tpl.render(msgs, enable_thinking=False) != chatfmt.render(
        msgs, "qwen3", enable_thinking=False
    )


def test_an_option_the_source_reads_differently_renders_through_jinja(shared_dir: Path) -> None:
    source = _sub(
        official_source(QWEN3),
        (
            "enable_thinking is defined and enable_thinking is false",
            "enable_thinking is defined and not enable_thinking",
        ),
        ("{{- '<think>\\n\\n</think>\\n\\n' }}", "{{- '<think>\\n</think>\\n\\n' }}"),
    )
    tpl = chatfmt.get_template(source)
    assert isinstance(tpl, RecognizedTemplate)
    msgs = [{"role": "user", "content": "Hi"}]
    assert tpl.backend(msgs)[0] is tpl.native
    assert isinstance(tpl.backend(msgs, None, {"enable_thinking": False})[0], JinjaTemplate)
    assert tpl.render(msgs, enable_thinking=False) == official_render(
        source, msgs, enable_thinking=False
    )


def test_recognition_is_cached_by_source(shared_dir: Path) -> None:
    source = qwen3_string_content()
    assert recognize(source) is recognize(source)
    assert chatfmt.get_template(source) is chatfmt.get_template(source)


# --------------------------------------------------------------------------- item 7: variables
def _template_files() -> list[str]:
    return sorted(p.name for p in TEMPLATES.glob("*.jinja")) if TEMPLATES.is_dir() else []


@cache
def _loaded(name: str) -> chatfmt.Template:
    return chatfmt.get_template(str(TEMPLATES / name))


_VARIABLE_CONVERSATIONS = [CONVERSATIONS[0], CONVERSATIONS[2]]
_CHANGED = [{"bos_token": "", "eos_token": "<|im_end|>"}, {"bos_token": "<B>", "eos_token": "<E>"}]


def _refused_value(messages: list[dict[str, Any]], exc: ChatFmtError) -> str:
    """The text of the message field a refusal names (a call's first argument for tool calls)."""
    index, field = getattr(exc, "index", None), getattr(exc, "field", None) or ""
    assert index is not None, f"the refusal names no message: {exc}"
    message = messages[index]
    if field.startswith("tool_calls"):
        args = message["tool_calls"][0]["function"]["arguments"]
        args = json.loads(args) if isinstance(args, str) else args
        return str(next(iter(args.values())))
    value = message.get(field.split(".")[0].split("[")[0])
    assert isinstance(value, str) and value, f"no text in {field}: {exc}"
    return value


@pytest.mark.parametrize("name", _template_files())
def test_token_variables_render_like_transformers(shared_dir: Path, name: str) -> None:
    """bos_token/eos_token (the recognized values, llama.cpp's defaults, changed ones) as transformers uses them."""
    source = official_source(name)
    tpl = _loaded(name)
    if isinstance(tpl, RecognizedTemplate):
        established = dict(recognize(source).tokens or {})
    elif isinstance(tpl, PackagedTemplate):  # a shipped template carries its model's tokens
        established = dict(tpl.variables)
    else:
        established = {}
    settings = [established, {"bos_token": "<s>", "eos_token": "</s>"}, *_CHANGED]
    for messages, tools, _ in _VARIABLE_CONVERSATIONS:
        for variables in settings:
            try:
                want = official_render(source, messages, tools=tools, **variables)
            except Exception:
                continue
            try:
                got = chatfmt.render(copy.deepcopy(messages), tpl, tools=tools, **variables)
            except ChatFmtError as exc:
                # a native template may refuse what the source loses silently (no silent
                # loss): the refused message's field must really be missing from the source's
                # render
                assert isinstance(tpl, (RecognizedTemplate, PackagedTemplate)), exc
                assert _refused_value(messages, exc) not in want, exc
                continue
            assert got == want, f"{name} {variables}"


def test_variables_the_source_never_reads_are_ignored(shared_dir: Path) -> None:
    tpl = _loaded("Qwen-Qwen2.5-7B-Instruct.jinja")
    assert isinstance(tpl, RecognizedTemplate)
    msgs = [{"role": "user", "content": "Hi"}]
    out = chatfmt.render(
        msgs, tpl, bos_token="", eos_token="<|im_end|>", pad_token="<p>", anything=1
    )
    assert (
        out
        == tpl.render(msgs)
        == official_render(official_source("Qwen-Qwen2.5-7B-Instruct.jinja"), msgs)
    )
    assert tpl.backend(msgs, None, {"bos_token": "", "whatever": 1})[0] is tpl.native


def test_token_variables_route_the_call(shared_dir: Path) -> None:
    tpl = _loaded("meta-llama-Llama-3.1-8B-Instruct.jinja")
    assert isinstance(tpl, RecognizedTemplate)
    msgs = [{"role": "user", "content": "Hi"}]
    assert tpl.backend(msgs, None, {"bos_token": "<|begin_of_text|>"})[0] is tpl.native
    assert isinstance(tpl.backend(msgs, None, {"bos_token": ""})[0], JinjaTemplate)
    assert not tpl.render(msgs, bos_token="").startswith("<|begin_of_text|>")
    # an option of the native template that the source reads and recognition probed
    assert tpl.backend(msgs, None, {"date_string": "1 Jan 2025"})[0] is tpl.native
    src = official_source("meta-llama-Llama-3.1-8B-Instruct.jinja")
    want = official_render(src, msgs, bos_token="<|begin_of_text|>", date_string="1 Jan 2025")
    assert tpl.render(msgs, date_string="1 Jan 2025") == want
    with pytest.raises(TemplateError, match="set by chatfmt"):
        tpl.render(msgs, documents=[])


def test_chatfmt_options_the_source_does_not_read_are_ignored(shared_dir: Path) -> None:
    """As transformers ignores them: the loaded template is the source, not the native template by name."""
    tpl = _loaded("internlm-internlm2-chat-7b.jinja")
    assert isinstance(tpl, RecognizedTemplate)
    msgs = [{"role": "user", "content": "Hi"}]
    out = tpl.render(msgs, plugin_prompt="P: {prompt}\n", tools_json="compact")
    assert out == official_render(
        official_source("internlm-internlm2-chat-7b.jinja"), msgs, bos_token="<s>"
    )


def test_loaded_templates_pickle_for_worker_processes(shared_dir: Path) -> None:
    msgs = [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    for tpl in (chatfmt.get_template(qwen3_string_content()), _loaded("Kimi-K3.jinja")):
        copied = pickle.loads(pickle.dumps(tpl))
        assert type(copied) is type(tpl) and copied.render(msgs) == tpl.render(msgs)


def test_unprobed_shapes_render_through_jinja(shared_dir: Path) -> None:
    """A role alias or custom role was never probed: the source decides (Qwen3's file skips it)."""
    source = official_source(QWEN3)
    tpl = chatfmt.get_template(source)
    assert isinstance(tpl, RecognizedTemplate) and not recognize(source).differs
    for role in ("developer", "tool_response"):
        msgs = [{"role": role, "content": "Be terse."}, {"role": "user", "content": "Hi"}]
        assert isinstance(tpl.backend(msgs)[0], JinjaTemplate)
        assert tpl.render(msgs) == official_render(source, msgs)
    plain = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}]
    assert tpl.backend(plain)[0] is tpl.native
