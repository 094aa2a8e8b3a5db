"""Regression tests for the review findings on the core (template, segments, protocol, spec, CLI)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import chatfmt
from chatfmt import TemplateError, UnsupportedFeatureError, ValidationError
from chatfmt.cli import app
from chatfmt.config import GenerationConfig
from chatfmt.jinja import JinjaTemplate
from chatfmt.protocol import validate_conversation
from chatfmt.segments import Kind, Segment, SegmentBuilder, TextSink, truncate_after_content
from chatfmt.spec import spec_from_dict
from chatfmt.template import RenderContext, parse_now

USER_HI = {"role": "user", "content": "hi"}
SIMPLE_JINJA = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
#: A Jinja template that moves the system text to the start of the sequence (like DeepSeek V3).
SYSTEM_FIRST_JINJA = (
    "{% set ns = namespace(sys='') %}{% for m in messages %}{% if m.role == 'system' %}"
    "{% set ns.sys = m.content %}{% endif %}{% endfor %}<s>{{ ns.sys }}"
    "{% for m in messages %}{% if m.role == 'user' %}<U>{{ m.content }}"
    "{% elif m.role == 'assistant' %}<A>{{ m.content }}</s>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<A>{% endif %}"
)


# ------------------------------------------------------------------ 1. continue_final_message
@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("qwen2.5", "<|im_start|>assistant\n"),
        ("llama3", "<|start_header_id|>assistant<|end_header_id|>\n\n"),
        ("gemma3", "<start_of_turn>model\n"),
        ("phi3", "<|assistant|>\n"),
        ("mistral-v7", "[INST]hi[/INST]"),
    ],
)
def test_continue_empty_final_message_ends_at_open_header(name: str, header: str) -> None:
    msgs = [USER_HI, {"role": "assistant", "content": ""}]
    text = chatfmt.render(msgs, name, continue_final_message=True)
    assert text.endswith(header)
    assert not text.endswith(chatfmt.render(msgs, name, add_generation_prompt=False)[-3:])


def test_continue_null_final_message() -> None:
    msgs = [USER_HI, {"role": "assistant", "content": None}]
    text = chatfmt.render(msgs, "llama3", continue_final_message=True)
    assert text == chatfmt.render([USER_HI], "llama3")


def test_continue_empty_final_message_jinja() -> None:
    t = JinjaTemplate(SIMPLE_JINJA)
    text = t.render([USER_HI, {"role": "assistant", "content": ""}], continue_final_message=True)
    assert text == "<|user|>hi<|end|><|assistant|>"


def test_truncate_after_content_rules() -> None:
    segs = [
        Segment("<u>", Kind.CONTROL, 0),
        Segment("hi", Kind.CONTENT, 0),
        Segment("<a>", Kind.CONTROL, 1),
        Segment("</s>", Kind.CONTROL, 1, trained=True),
        Segment("\n", Kind.CONTROL, 1),
    ]
    assert "".join(s.text for s in truncate_after_content(segs, 1)) == "<u>hi<a>"
    assert "".join(s.text for s in truncate_after_content(segs, 0)) == "<u>hi"


@pytest.mark.parametrize("source", ["qwen2.5", "jinja"])
def test_continue_final_message_with_tool_calls_is_rejected(source: str) -> None:
    msgs = [
        USER_HI,
        {
            "role": "assistant",
            "content": "x",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
        },
    ]
    tpl = chatfmt.get_template("qwen2.5") if source == "qwen2.5" else JinjaTemplate(SIMPLE_JINJA)
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(msgs, continue_final_message=True)
    assert (err.value.index, err.value.field) == (1, "tool_calls")


# ------------------------------------------------------------------ 2. sequence_start=False
@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-r1-distill-qwen"])
def test_follow_up_system_at_sequence_start_raises(name: str) -> None:
    msgs = [{"role": "system", "content": "SYSMARK"}, {"role": "user", "content": "hello"}]
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(msgs, name, sequence_start=False)
    assert (err.value.index, err.value.field) == (0, "role")


def test_follow_up_system_turn_still_renders_where_it_is_a_turn() -> None:
    msgs = [{"role": "system", "content": "SYSMARK"}, {"role": "user", "content": "hello"}]
    assert "SYSMARK" in chatfmt.render(msgs, "qwen2.5", sequence_start=False)


def test_follow_up_system_at_sequence_start_raises_for_jinja() -> None:
    t = JinjaTemplate(SYSTEM_FIRST_JINJA)
    msgs = [{"role": "system", "content": "SYSMARK"}, {"role": "user", "content": "hello"}]
    with pytest.raises(UnsupportedFeatureError) as err:
        t.render(msgs, sequence_start=False)
    assert err.value.index == 0
    assert t.render([{"role": "user", "content": "hello"}], sequence_start=False) == "<U>hello<A>"


# ------------------------------------------------------------------ 3. completion templates
def test_completion_template_accepts_one_prompt_only() -> None:
    assert chatfmt.render("Once upon", "internlm-7b") == "Once upon"
    assert chatfmt.render([{"role": "user", "content": "Once"}], "internlm-7b") == "Once"
    two = [{"role": "system", "content": "You are X."}, {"role": "user", "content": "Hello"}]
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(two, "internlm-7b")
    assert err.value.index == 1
    tool = {"type": "function", "function": {"name": "f"}}
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render("x", "internlm-7b", tools=[tool])
    assert err.value.field == "tools"
    call = {"type": "function", "function": {"name": "f", "arguments": {}}}
    with pytest.raises(UnsupportedFeatureError):
        chatfmt.render(
            [{"role": "assistant", "content": None, "tool_calls": [call]}], "internlm-7b"
        )


# ------------------------------------------------------------------ 4. CLI --option
runner = CliRunner()


def _conv(tmp_path: Path) -> str:
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([USER_HI]), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("key", ["tools", "now", "messages", "sequence_start"])
def test_cli_option_rejects_render_parameters(tmp_path: Path, key: str) -> None:
    result = runner.invoke(app, ["render", "-t", "qwen3", "-O", f"{key}=[]", _conv(tmp_path)])
    assert result.exit_code == 2
    assert "render parameter" in result.output


@pytest.mark.parametrize(("value", "closed"), [("False", True), ("false", True), ("True", False)])
def test_cli_option_python_booleans(tmp_path: Path, value: str, closed: bool) -> None:
    args = ["render", "-t", "qwen3", "-O", f"enable_thinking={value}", _conv(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output.endswith("<think>\n\n</think>\n\n") is closed


def test_cli_option_values() -> None:
    from chatfmt.cli import option_value

    assert option_value("None") is None
    assert option_value('{"a": 1}') == {"a": 1}
    assert option_value("hello world") == "hello world"
    assert option_value('"False"') == "False"
    for bad in ("TRUE", "yes", "[1,", "Null"):
        with pytest.raises(Exception) as err:
            option_value(bad)
        assert type(err.value).__name__ == "Exit"


# ------------------------------------------------------------------ 5. protocol
def test_tools_not_iterable() -> None:
    with pytest.raises(ValidationError) as err:
        chatfmt.render([USER_HI], "qwen3", tools=5)  # type: ignore[arg-type]
    assert err.value.field == "tools"


def _call(arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": arguments}}],
    }


def test_too_deep_arguments() -> None:
    deep_text = '{"a":' + "[" * 100000 + "]" * 100000 + "}"
    deep_obj: list[Any] = []
    for _ in range(100000):
        deep_obj = [deep_obj]
    for args in (deep_text, {"a": deep_obj}):
        with pytest.raises(ValidationError) as err:
            validate_conversation([USER_HI, _call(args)])
        assert (err.value.index, err.value.field) == (1, "tool_calls[0].function.arguments")


def test_lone_surrogates_in_content_pass_render_and_fail_tokenization(shared_dir: Any) -> None:
    """Content is a str in and a str out; it is checked where it must become UTF-8 bytes."""
    from chatfmt import TokenizationError, encode, load_tokenizer

    msgs = [USER_HI, {"role": "assistant", "content": "a\ud800b"}]
    assert "a\ud800b" in chatfmt.render(msgs, "qwen2.5")
    tok = load_tokenizer(shared_dir / "tokenizers" / "qwen3")
    with pytest.raises(TokenizationError, match=r"messages\[1\]: contains a lone surrogate"):
        encode(msgs, "qwen2.5", tok)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "user", "content": "ok", "name": "n\ud800"}, "name"),
        (_call('{"a": "\ud800"}'), "tool_calls[0].function.arguments"),
        (_call({"a": "\ud800"}), "tool_calls[0].function.arguments"),
    ],
)
def test_lone_surrogates_are_rejected(message: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        validate_conversation([USER_HI, message])
    assert (err.value.index, err.value.field) == (1, field)


def test_surrogate_in_tool_schema_is_rejected_and_valid_unicode_passes() -> None:
    tool = {"type": "function", "function": {"name": "f", "description": "d\ud800"}}
    with pytest.raises(ValidationError) as err:
        validate_conversation([USER_HI], [tool])
    assert err.value.field == "tools[0].function.description"
    conv = validate_conversation([{"role": "user", "content": "你好 🙂 é"}])
    assert conv.messages[0].content == "你好 🙂 é"


@pytest.mark.parametrize("value", ["", 0, {}])
def test_tool_calls_of_wrong_type(value: Any) -> None:
    with pytest.raises(ValidationError) as err:
        validate_conversation([USER_HI, {"role": "assistant", "content": "a", "tool_calls": value}])
    assert (err.value.index, err.value.field) == (1, "tool_calls")


def test_tool_calls_null_or_empty_is_no_calls() -> None:
    for value in (None, []):
        conv = validate_conversation([{"role": "assistant", "content": "a", "tool_calls": value}])
        assert conv.messages[0].tool_calls == ()


@pytest.mark.parametrize("key", ["tool_call", "toolcalls", "function_call"])
def test_near_miss_keys_are_rejected(key: str) -> None:
    msg = {"role": "assistant", "content": "a", key: [{"type": "function"}]}
    with pytest.raises(ValidationError) as err:
        validate_conversation([USER_HI, msg])
    assert (err.value.index, err.value.field) == (1, key)
    assert "tool_calls" in str(err.value)


def test_other_extra_keys_are_ignored() -> None:
    # OpenAI clients send fields such as refusal/audio/function_call=None
    msg = {
        "role": "assistant",
        "content": "a",
        "refusal": None,
        "audio": None,
        "function_call": None,
    }
    conv = validate_conversation([USER_HI, msg])
    assert conv.messages[1].content == "a"


# ------------------------------------------------------------------ 6. spec files
_ROLES = {"user": {"prefix": "U:"}, "assistant": {"prefix": "A:", "suffix": "</s>"}}


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"aliases": "myalias"}, "aliases"),
        ({"model_ids": "org/name"}, "model_ids"),
        ({"model_patterns": "x.*"}, "model_patterns"),
        ({"control_tokens": "</s>"}, "control_tokens"),
        ({"generation": {"stop_words": "</s>"}}, "stop_words"),
        ({"generation": {"tool_stop_words": "</s>"}}, "tool_stop_words"),
        ({"generation": {"session_len": "big"}}, "session_len"),
        ({"generation": {"top_k": 1.5}}, "top_k"),
        ({"generation": {"top_p": "high"}}, "top_p"),
        ({"generation": {"temperature": True}}, "temperature"),
        ({"generation": {"repetition_penalty": None}}, "repetition_penalty"),
        ({"generation": {"capability": "voice"}}, "capability"),
        ({"roles": {**_ROLES, "user": {"prefix": 5}}}, "roles.user.prefix"),
        ({"bos": 1}, "bos"),
    ],
)
def test_spec_type_errors_name_the_key(extra: dict[str, Any], key: str) -> None:
    data = {"name": "x", "roles": _ROLES, **extra}
    with pytest.raises(TemplateError) as err:
        spec_from_dict(data, origin="my.toml")
    assert key in str(err.value) and "my.toml" in str(err.value)


def test_spec_lists_and_generation_replace() -> None:
    spec = spec_from_dict(
        {"name": "x", "roles": _ROLES, "aliases": ["y"], "generation": {"stop_words": ["</s>"]}}
    )
    assert spec.aliases == ("y",) and spec.generation_config.stop_words == ("</s>",)
    assert GenerationConfig().replace(stop_words=["a", "b"]).stop_words == ("a", "b")
    with pytest.raises(TemplateError):
        GenerationConfig().replace(stop_words="</s>")


# ------------------------------------------------------------------ 7. now
def test_now_parser() -> None:
    assert parse_now("2025-03-07") == dt.datetime(2025, 3, 7)
    assert parse_now("2025-03-07T10:30:00") == dt.datetime(2025, 3, 7, 10, 30)
    assert parse_now(dt.date(2025, 3, 7)) == dt.datetime(2025, 3, 7)
    assert parse_now(None) is None
    for bad in ("2025-03-07 NOT A DATE", "07 Mar 2025", 20250307):
        with pytest.raises(ValidationError) as err:
            parse_now(bad)  # type: ignore[arg-type]
        assert err.value.field == "now"
    assert RenderContext(now="2025-03-07T23:59:00").now == dt.date(2025, 3, 7)


def test_now_same_for_native_and_jinja() -> None:
    with pytest.raises(ValidationError):
        chatfmt.render([USER_HI], "llama3.2", now="2025-03-07 NOT A DATE")
    assert "07 Mar 2025" in chatfmt.render([USER_HI], "llama3.2", now="2025-03-07T08:00:00")
    t = JinjaTemplate("{{ strftime_now('%d %b %Y %H:%M') }}")
    assert t.render([USER_HI], now="2025-03-07T08:15:00") == "07 Mar 2025 08:15"
    assert t.render([USER_HI], now=dt.date(2025, 3, 7)) == "07 Mar 2025 00:00"
    with pytest.raises(ValidationError):
        t.render([USER_HI], now="2025-03-07 NOT A DATE")


# ------------------------------------------------------------------ 8. shared segments logic
def test_jinja_template_uses_the_base_segments() -> None:
    assert "segments" not in JinjaTemplate.__dict__
    t = JinjaTemplate(SIMPLE_JINJA)
    with pytest.raises(ValidationError) as err:
        t.segments([], continue_final_message=True)
    assert err.value.field == "messages"
    segs = t.segments(
        [USER_HI, {"role": "assistant", "content": "part"}], continue_final_message=True
    )
    assert "".join(s.text for s in segs) == "<|user|>hi<|end|><|assistant|>part"


# ------------------------------------------------------------------ 9. README Command-R example
def test_command_r_readme_example() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string", "description": "City name"}},
                "required": ["location"],
            },
        },
    }
    cr = chatfmt.get_template("CohereForAI/c4ai-command-r-plus")
    prompt = cr.render([{"role": "user", "content": "Weather in Paris?"}], tools=[tool])
    assert "get_current_weather" in prompt and "City name" in prompt


class _RecordingTemplate(chatfmt.Template):
    """A user subclass: records the builder class each call gets; one plain builder is fine too."""

    name = "recording-test"

    def __init__(self) -> None:
        self.builders: list[type] = []

    def render_conversation(self, conv: Any, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        self.builders.append(type(b))
        for m in conv.messages:
            b.turn(f"<{m.role}>", m.text, "</s>", "\n", m.index, m.role == "assistant")
        own = SegmentBuilder()  # a builder made directly still works in text mode
        own.control("END")
        b.extend(own.segments)
        return b.segments


def test_render_writes_to_a_text_sink_and_segments_to_a_full_builder() -> None:
    tpl = _RecordingTemplate()
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    text = tpl.render(msgs)
    segs = tpl.segments(msgs)
    assert tpl.builders == [TextSink, SegmentBuilder]
    assert text == "".join(s.text for s in segs) == "<user>hi</s>\n<assistant>yo</s>\nEND"
    assert [(s.kind, s.message, s.trained) for s in segs if s.text == "yo"] == [
        (Kind.CONTENT, 1, True)
    ]
    assert RenderContext().builder is SegmentBuilder
    assert RenderContext(text_only=True).builder is TextSink
