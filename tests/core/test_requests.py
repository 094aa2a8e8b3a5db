"""``RenderRequest`` and ``ParseRequest``: one request object per call, the same as keywords."""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
import pickle
from typing import Any

import pytest

import chatfmt
from chatfmt import ParseRequest, RenderRequest
from chatfmt.errors import ParseError, TemplateError, ValidationError
from chatfmt.jinja import JinjaTemplate, RecognizedTemplate
from chatfmt.parsing.base import parser_names

from _support import SHARED, WEATHER_TOOL, official_source

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "Sunny."},
    {"role": "user", "content": "And tomorrow?"},
]
DATED = "{{ strftime_now('%Y-%m-%d') }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}{{ flag }}"

#: (keywords, the same call as a request) pairs.
CALLS: list[tuple[dict[str, Any], RenderRequest]] = [
    ({}, RenderRequest()),
    ({"add_generation_prompt": False}, RenderRequest(add_generation_prompt=False)),
    ({"tools": [WEATHER_TOOL]}, RenderRequest(tools=[WEATHER_TOOL])),
    (
        {"enable_thinking": False, "now": "2025-01-02"},
        RenderRequest(now="2025-01-02", options={"enable_thinking": False}),
    ),
    (
        {"continue_final_message": True},
        RenderRequest(continue_final_message=True),
    ),
    (
        {"sequence_start": False, "add_generation_prompt": True},
        RenderRequest(sequence_start=False),
    ),
]


def _templates() -> list[chatfmt.Template]:
    out: list[chatfmt.Template] = [chatfmt.get_template("qwen3")]
    if SHARED.is_dir():
        recognized = chatfmt.get_template(official_source("Qwen-Qwen3-0.6B.jinja"))
        assert isinstance(recognized, RecognizedTemplate)
        out.append(recognized)
    return out


def _messages(kw: dict[str, Any]) -> list[dict[str, Any]]:
    if kw.get("continue_final_message"):
        return [*MESSAGES, {"role": "assistant", "content": "Probably"}]
    if kw.get("sequence_start") is False:
        return [{"role": "user", "content": "And tomorrow?"}]
    return MESSAGES


@pytest.mark.parametrize("template", _templates(), ids=lambda t: type(t).__name__)
@pytest.mark.parametrize(("kw", "request_"), CALLS, ids=lambda c: repr(c)[:40])
def test_keywords_and_request_render_the_same(
    template: chatfmt.Template, kw: dict[str, Any], request_: RenderRequest
) -> None:
    messages = _messages(kw)
    text = chatfmt.render(messages, template, **kw)
    assert chatfmt.render(messages, template, request=request_) == text
    assert template.render(messages, request=request_) == text
    segments = chatfmt.render_segments(messages, template, **kw)
    assert template.segments(messages, request=request_) == segments
    assert "".join(s.text for s in segments) == text


def test_encode_takes_the_request() -> None:
    pytest.importorskip("tokenizers")
    from chatfmt.tokens import encode, encode_batch, load_tokenizer

    path = SHARED / "tokenizers" / "qwen3"
    if not path.is_dir():
        pytest.skip("reference tokenizer not found")
    tok = load_tokenizer(path)
    kw: dict[str, Any] = {"tools": [WEATHER_TOOL], "enable_thinking": False}
    by_keywords = encode(MESSAGES, "qwen3", tok, **kw)
    request = RenderRequest(
        tools=[WEATHER_TOOL], add_generation_prompt=False, options={"enable_thinking": False}
    )
    by_request = encode(MESSAGES, "qwen3", tok, request=request)
    assert by_request.input_ids == by_keywords.input_ids
    assert by_request.labels == by_keywords.labels
    # a batch item's own tools replace the request's
    (item,) = encode_batch(
        [{"messages": MESSAGES, "tools": [WEATHER_TOOL]}],
        "qwen3",
        tok,
        request=RenderRequest(add_generation_prompt=False, options={"enable_thinking": False}),
    )
    assert not isinstance(item, Exception) and item.input_ids == by_keywords.input_ids


def test_jinja_backend_takes_the_request() -> None:
    tpl = JinjaTemplate(DATED)
    request = RenderRequest(now=dt.date(2024, 5, 6), options={"flag": "!"})
    text = tpl.render(MESSAGES, request=request)
    assert text.startswith("2024-05-06") and text.endswith("<assistant>!")
    assert text == tpl.render(MESSAGES, now=dt.date(2024, 5, 6), flag="!")
    assert "".join(s.text for s in tpl.segments(MESSAGES, request=request)) == text


def test_keywords_change_a_given_request() -> None:
    base = RenderRequest(add_generation_prompt=False, options={"enable_thinking": True})
    merged = RenderRequest.from_kwargs({"enable_thinking": False, "now": "2025-02-03"}, base)
    assert merged == RenderRequest(
        add_generation_prompt=False, now="2025-02-03", options={"enable_thinking": False}
    )
    assert base.options == {"enable_thinking": True}  # the base is unchanged
    assert chatfmt.render(MESSAGES, "qwen3", request=base, enable_thinking=False) == chatfmt.render(
        MESSAGES, "qwen3", add_generation_prompt=False, enable_thinking=False
    )
    assert RenderRequest.from_kwargs({}, base) is base


def test_a_request_is_immutable() -> None:
    options = {"enable_thinking": False}
    request = RenderRequest(options=options)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.add_generation_prompt = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        request.options["enable_thinking"] = True  # type: ignore[index]
    options["enable_thinking"] = True  # the caller's dict is copied
    assert request.options == {"enable_thinking": False}
    parse_request = ParseRequest(parser="hermes")
    with pytest.raises(dataclasses.FrozenInstanceError):
        parse_request.parser = "plain"  # type: ignore[misc]


def test_requests_pickle() -> None:
    request = RenderRequest(tools=[WEATHER_TOOL], now="2025-01-02", options={"x": [1]})
    assert pickle.loads(pickle.dumps(request)) == request
    parse_request = ParseRequest(reasoning_parser=None, options={"enable_thinking": True})
    assert pickle.loads(pickle.dumps(parse_request)) == parse_request


def test_an_unknown_keyword_is_named() -> None:
    with pytest.raises(TemplateError, match=r"no option\(s\) add_generation_promt") as info:
        chatfmt.render(MESSAGES, "qwen3", add_generation_promt=False)
    assert "render keywords: add_generation_prompt" in str(info.value)
    with pytest.raises(TypeError, match="toolz"):
        RenderRequest(toolz=[])  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"add_generation_prompt": "yes"}, "add_generation_prompt"),
        ({"sequence_start": None}, "sequence_start"),
        ({"now": "tomorrow"}, "now"),
        ({"options": {"tools": []}}, "options.tools"),
        ({"options": [("a", 1)]}, "options"),
    ],
)
def test_bad_fields_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        RenderRequest(**kwargs)
    assert info.value.field == field


def test_render_signatures_are_not_copied() -> None:
    """The render keywords are the request's fields, not parameters of each render path."""
    from chatfmt.integrations.transformers import apply_chat_template
    from chatfmt.jinja.recognized import RecognizedTemplate
    from chatfmt.jinja.untrusted import TemplateSandbox
    from chatfmt.tokens.encode import encode, encode_batch

    paths = [
        chatfmt.render,
        chatfmt.render_segments,
        chatfmt.Template.render,
        chatfmt.Template.segments,
        JinjaTemplate._render,
        RecognizedTemplate._render,
        encode,
        encode_batch,
        TemplateSandbox.render,
        TemplateSandbox.segments,
    ]
    for path in paths:
        copied = RenderRequest.KEYWORDS & set(inspect.signature(path).parameters)
        assert not copied, f"{path.__qualname__} repeats {sorted(copied)}"
    for path in (chatfmt.parse, chatfmt.StreamParser):
        copied = ParseRequest.KEYWORDS & set(inspect.signature(path).parameters)
        assert not copied, f"{path.__qualname__} repeats {sorted(copied)}"
    # transformers' own signature is the drop-in's contract (it builds one request)
    assert "add_generation_prompt" in inspect.signature(apply_chat_template).parameters


def test_the_cli_refuses_every_render_keyword_as_an_option() -> None:
    pytest.importorskip("typer")
    from chatfmt.commands._shared import RENDER_PARAMETERS

    assert set(RENDER_PARAMETERS) >= RenderRequest.KEYWORDS


# ---------------------------------------------------------------------- parsing
OUTPUT = (
    '<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
)


def _ids(index: int) -> str:
    return f"call_{index}"


def test_parse_keywords_and_request_are_the_same() -> None:
    kw: dict[str, Any] = {"tools": [WEATHER_TOOL], "id_factory": _ids, "enable_thinking": False}
    request = ParseRequest(
        tools=[WEATHER_TOOL], id_factory=_ids, options={"enable_thinking": False}
    )
    assert ParseRequest.from_kwargs(kw) == request
    message = chatfmt.parse(OUTPUT, "qwen3", **kw)
    assert message["tool_calls"][0]["id"] == "call_0"
    assert chatfmt.parse(OUTPUT, "qwen3", request=request) == message
    stream = chatfmt.StreamParser("qwen3", request=request)
    deltas = stream.feed(OUTPUT) + stream.finish()
    assert chatfmt.merge_deltas(deltas) == message


def test_template_and_parser_are_looked_up_apart() -> None:
    assert parser_names("hermes") == ("hermes", None)
    tool, reasoning = parser_names("think")
    assert tool == "plain" and reasoning == "think"
    with pytest.raises(ParseError, match="unknown tool parser 'nope'"):
        parser_names("nope")
    # a parser name as the template argument, or a template with its parser forced
    assert chatfmt.parse(OUTPUT, "hermes")["tool_calls"]
    forced = chatfmt.parse(OUTPUT, "qwen3", request=ParseRequest(parser="plain"))
    assert "tool_calls" not in forced or not forced["tool_calls"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id_factory": 3}, "id_factory must be a callable"),
        ({"thinking_prefilled": "yes"}, "thinking_prefilled must be"),
        ({"parser": 1}, "parser must be a parser name"),
        ({"options": {"tools": []}}, "'tools' is a parse keyword"),
    ],
)
def test_bad_parse_fields_raise_parse_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ParseError, match=message):
        ParseRequest(**kwargs)


def test_an_unknown_parse_option_is_named() -> None:
    with pytest.raises(ParseError, match=r"unknown parse option\(s\) id_factori"):
        chatfmt.parse(OUTPUT, "hermes", id_factori=_ids)
    with pytest.raises(ParseError, match=r"unknown parse option\(s\) enable_thinkin .*qwen3"):
        chatfmt.parse(OUTPUT, "qwen3", enable_thinkin=False)
