"""The one comparator against official templates: chatfmt equals the official template, or both refuse.

``assert_matches_official`` renders a conversation with chatfmt and with the official Jinja template
(through ``_support.official_render``, transformers' own renderer) and asserts one of:

* both render, and the texts are byte-identical (and, with ``segments=True``, so is the join of
  chatfmt's segments, whose trained spans all belong to assistant messages);
* the official template raises, and chatfmt raises a ``ChatFmtError`` (or, for a documented
  ``extension``, renders);
* the official template renders but would drop data silently (``dropped``: the (index, field)
  pairs the caller knows it loses), and chatfmt refuses with an error naming one of them.

Whatever the outcome, chatfmt must leave the caller's messages untouched.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

import pytest

import chatfmt
from chatfmt.errors import ChatFmtError, UnsupportedFeatureError
from chatfmt.protocol import validate_conversation
from chatfmt.segments import Segment
from chatfmt.template import Template

from _support import official_render, require_shared

Messages = list[dict[str, Any]]


@contextmanager
def official_today(day: dt.date) -> Iterator[None]:
    """Make the oracle's ``strftime_now`` see ``day`` (transformers calls ``datetime.now()``)."""
    from transformers.utils import chat_template_utils

    class _Fixed(dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> _Fixed:  # type: ignore[override]
            return cls(day.year, day.month, day.day, 12, 0)

    with patch.object(chat_template_utils, "datetime", _Fixed):
        yield


def ollama_source(model: str) -> str:
    """The chat template Ollama's GGUF of ``model`` carries (``library/name:tag``), from
    ../shared/reference/ollama_gguf_chat_templates.json."""
    path = require_shared() / "reference" / "ollama_gguf_chat_templates.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return next(e["gguf"] for e in data["entries"] if e["model"] == model)


def null_call_content_as_empty(messages: Messages) -> Messages | None:
    """The documented workaround for templates that fail on a tool-call message's null content:
    chatfmt renders it as ""; None when no message needs it."""
    if not any(m.get("tool_calls") and m.get("content") is None for m in messages):
        return None
    return [
        {**m, "content": ""} if m.get("tool_calls") and m.get("content") is None else m
        for m in messages
    ]


def null_content_as_absent(messages: Messages) -> Messages:
    """For templates that print the string 'None' for ``content: null`` and nothing for a
    missing key: chatfmt renders a null content like the missing key."""
    return [{k: v for k, v in m.items() if not (k == "content" and v is None)} for m in messages]


def glm4_server_messages(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The message form GLM-4's API server builds for its chat template (tools on the first message)."""
    out: list[dict[str, Any]] = []
    for m in validate_conversation(conv["messages"], conv["tools"]).messages:
        if m.role == "assistant":
            if m.text:
                out.append({"role": "assistant", "content": m.text})
            for c in m.tool_calls:
                out.append({"role": "assistant", "metadata": c.name, "content": c.arguments_json})
        elif m.role == "tool":
            out.append({"role": "observation", "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    if conv["tools"]:
        out[0]["tools"] = conv["tools"]
    return out


def assert_matches_official(
    template: Template | str,
    source: str,
    messages: Messages,
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    options: Mapping[str, Any] | None = None,
    official_vars: Mapping[str, Any] | None = None,
    official_messages: Messages | None = None,
    official_fallback: Callable[[Messages], Messages | None] | None = None,
    chatfmt_vars: Mapping[str, Any] | None = None,
    dropped: Collection[tuple[int | None, str]] = (),
    refusal: type[ChatFmtError] | tuple[type[ChatFmtError], ...] = UnsupportedFeatureError,
    extension: bool = False,
    segments: bool = False,
    each_segment: Callable[[Segment, Messages], None] | None = None,
    oracle: Callable[..., str] = official_render,
) -> str | None:
    """chatfmt's render of ``messages`` equals the official template's, or both refuse.

    ``options`` go to both renderers, ``official_vars`` (``bos_token``, ``date_string``…) to the
    official template only, ``chatfmt_vars`` (``now``…) to chatfmt only. ``official_messages`` is
    what the official template is given instead of ``messages`` (a normalized form);
    ``official_fallback`` rewrites the conversation for a second try when the official template
    raises (a documented workaround; it returns None when it does not apply). ``dropped`` lists
    the (index, field) pairs the official template would lose silently: chatfmt must then raise
    ``refusal`` naming one of them. ``extension``: chatfmt renders what the official template
    refuses (a documented extension). ``segments=True`` also compares the join of chatfmt's
    segments and checks that trained spans belong to assistant messages, then runs
    ``each_segment(segment, messages)`` on each. ``oracle`` replaces ``official_render``.
    Returns the common render, or None when it was refused.
    """
    tpl = chatfmt.get_template(template) if isinstance(template, str) else template
    opts = dict(options or {})
    ours = {"tools": tools, "add_generation_prompt": add_generation_prompt, **opts}
    ours.update(chatfmt_vars or {})
    before = copy.deepcopy(messages)
    given = messages if official_messages is None else official_messages
    try:
        expected = oracle(
            source,
            given,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            **{**opts, **(official_vars or {})},
        )
    except Exception:
        fixed = official_fallback(given) if official_fallback is not None else None
        if fixed is not None:
            return assert_matches_official(
                tpl,
                source,
                messages,
                tools=tools,
                add_generation_prompt=add_generation_prompt,
                options=options,
                official_vars=official_vars,
                official_messages=fixed,
                chatfmt_vars=chatfmt_vars,
                dropped=dropped,
                refusal=refusal,
                extension=extension,
                segments=segments,
                each_segment=each_segment,
                oracle=oracle,
            )
        if extension:
            tpl.render(messages, **ours)
        else:
            with pytest.raises(ChatFmtError):
                tpl.render(messages, **ours, strict_history=True)
            _model_form_or_refusal(tpl, messages, ours, ChatFmtError, None)
        assert messages == before
        return None
    if dropped:
        with pytest.raises(refusal) as err:
            tpl.render(messages, **ours, strict_history=True)
        assert (err.value.index, err.value.field) in dropped, (err.value, dropped)
        _model_form_or_refusal(tpl, messages, ours, refusal, dropped)
        assert messages == before
        return None
    got = tpl.render(messages, **ours)
    assert got == expected
    if segments:
        segs = tpl.segments(messages, **ours)
        assert "".join(s.text for s in segs) == expected
        for s in segs:
            if s.trained:
                assert s.message is not None and messages[s.message]["role"] == "assistant"
            if each_segment is not None:
                each_segment(s, messages)
    assert messages == before
    return got


def _model_form_or_refusal(
    tpl: Template,
    messages: Messages,
    ours: Mapping[str, Any],
    refusal: type[ChatFmtError] | tuple[type[ChatFmtError], ...],
    dropped: Collection[tuple[int | None, str]] | None,
) -> None:
    """Without ``strict_history`` (what the official template refuses or drops): the same
    refusal, or text beside tool calls written as the model writes it (docs/rendering.md),
    with every message's text."""
    try:
        got = tpl.render(messages, **ours)
    except refusal as err:
        where = (getattr(err, "index", None), getattr(err, "field", None))
        assert dropped is None or where in dropped, (err, dropped)
        return
    for m in messages:
        text = m.get("content")
        if m.get("tool_calls") and isinstance(text, str):
            assert text.strip() in got


def assert_conv_matches_official(
    template: Template | str,
    source: str,
    conv: dict[str, Any],
    add_generation_prompt: bool,
    **kwargs: Any,
) -> str | None:
    """``assert_matches_official`` for a drawn conversation (``{"messages", "tools"}``)."""
    return assert_matches_official(
        template,
        source,
        conv["messages"],
        tools=conv["tools"],
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )
