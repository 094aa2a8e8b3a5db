"""chatfmt's vLLM parsers through vLLM's interfaces: names, registration, streamed ≡ whole.

Runs in the vLLM test environment (``tests/engines/vllm/setup.sh``); skipped elsewhere.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

pytest.importorskip(
    "vllm.tool_parsers", reason="vLLM is not installed (tests/engines/vllm/setup.sh)"
)

from importlib.metadata import entry_points

from engine_pieces import TOOLS, qwen3_tokenizer_or_skip
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.plugins import DEFAULT_PLUGINS_GROUP, load_general_plugins
from vllm.reasoning import ReasoningParserManager
from vllm.tool_parsers import ToolParserManager

import chatfmt.integrations.vllm as cv
from chatfmt.parsing import REASONING_PARSERS, TOOL_PARSERS

HERMES = (
    "I will look.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return qwen3_tokenizer_or_skip()


def request(**kwargs: Any) -> ChatCompletionRequest:
    return ChatCompletionRequest(messages=[], model="m", **kwargs)


def tool_names() -> list[str]:
    return [n for n in TOOL_PARSERS if ":" not in n]


def stream(parser: Any, tokenizer: Any, text: str) -> dict[str, Any]:
    """Feed ``text`` token by token (with ids) as vLLM's engine-based streaming does."""
    req = request(tools=TOOLS)
    got: dict[str, Any] = {"content": "", "calls": {}}
    ids = tokenizer.encode(text, add_special_tokens=False)
    deltas = [
        parser.extract_tool_calls_streaming("", "", tokenizer.decode([i]), [], [], [i], req)
        for i in ids
    ]
    for delta in [*deltas, parser.finish_streaming()]:
        if delta is None:
            continue
        got["content"] += delta.content or ""
        for call in delta.tool_calls:
            entry = got["calls"].setdefault(call.index, {"name": None, "arguments": ""})
            if call.function.name:
                assert entry["name"] is None
                entry["name"] = call.function.name
            entry["arguments"] += call.function.arguments or ""
    return got


def test_every_parser_name_is_registered_and_constructs(tokenizer: Any) -> None:
    tools = set(ToolParserManager.list_registered())
    reasoning = set(ReasoningParserManager.list_registered())
    assert {f"chatfmt-{n}" for n in tool_names()} | {"chatfmt"} <= tools
    assert {f"chatfmt-{n}" for n in REASONING_PARSERS} | {"chatfmt"} <= reasoning
    for name in tool_names():
        cls = ToolParserManager.get_tool_parser(f"chatfmt-{name}")
        parser = cls(tokenizer)
        assert cls.engine_based_streaming
        assert cls.plan_for(tokenizer) is parser._plan  # the plan is cached, not rebuilt
    for name in REASONING_PARSERS:
        rcls = ReasoningParserManager.get_reasoning_parser(f"chatfmt-{name}")
        assert rcls.engine_based_streaming
        assert rcls(tokenizer)._plan is rcls.plan_for(tokenizer)[0]


def test_registration_is_idempotent_and_replaces_nothing() -> None:
    before = (ToolParserManager.list_registered(), ReasoningParserManager.list_registered())
    hermes = ToolParserManager.get_tool_parser("hermes")
    cv.register()
    cv.register()
    load_general_plugins()
    assert (ToolParserManager.list_registered(), ReasoningParserManager.list_registered()) == before
    assert ToolParserManager.get_tool_parser("hermes") is hermes
    assert not issubclass(hermes, cv.ChatfmtToolParser)


def test_replacing_a_vllm_name_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = dict(ToolParserManager.tool_parsers)
    reasoning = dict(ReasoningParserManager.reasoning_parsers)
    monkeypatch.setenv(cv.REPLACE_ENV, "hermes,qwen3")
    try:
        cv.register()
        assert ToolParserManager.get_tool_parser("hermes") is cv.tool_parser_class("hermes")
        assert ReasoningParserManager.get_reasoning_parser("qwen3") is (
            cv.reasoning_parser_class("qwen3")
        )
    finally:
        ToolParserManager.tool_parsers.clear()
        ToolParserManager.tool_parsers.update(tools)
        ReasoningParserManager.reasoning_parsers.clear()
        ReasoningParserManager.reasoning_parsers.update(reasoning)


def test_entry_point_and_plugin_path() -> None:
    found = [e for e in entry_points(group=DEFAULT_PLUGINS_GROUP) if e.name == "chatfmt"]
    assert [e.value for e in found] == ["chatfmt.integrations.vllm:register"]
    ToolParserManager.import_tool_parser("chatfmt.integrations.vllm")  # --tool-parser-plugin
    assert "chatfmt-hermes" in ToolParserManager.list_registered()


def test_streamed_equals_whole_and_bookkeeping(tokenizer: Any) -> None:
    cls = ToolParserManager.get_tool_parser("chatfmt-hermes")
    whole = cls(tokenizer, TOOLS).extract_tool_calls(HERMES, request(tools=TOOLS))
    parser = cls(tokenizer, TOOLS)
    got = stream(parser, tokenizer, HERMES)
    assert [(c["name"], c["arguments"]) for c in got["calls"].values()] == [
        (c.function.name, c.function.arguments) for c in whole.tool_calls
    ]
    assert got["content"].strip() == (whole.content or "").strip() == "I will look."
    assert parser.prev_tool_call_arr == [
        {"name": "get_weather", "arguments": c.function.arguments} for c in whole.tool_calls
    ]
    assert parser.streamed_args_for_tool == [c.function.arguments for c in whole.tool_calls]
    assert parser.current_tool_id == 1
    assert parser.get_remaining_unstreamed_args() == ""  # nothing is sent twice


def test_template_parser_uses_the_models_template(tokenizer: Any) -> None:
    cls = ToolParserManager.get_tool_parser("chatfmt")
    assert cls.plan_for(tokenizer).tool_parser in TOOL_PARSERS
    got = cls(tokenizer).extract_tool_calls(HERMES, request(tools=TOOLS))
    assert [json.loads(c.function.arguments)["city"] for c in got.tool_calls] == ["Paris", "Rome"]
    rcls = ReasoningParserManager.get_reasoning_parser("chatfmt")
    # the text around the markers as written, as vLLM's reasoning parsers give it
    assert rcls(tokenizer).extract_reasoning("<think>\nhm\n</think>\n\nHi", request()) == (
        "\nhm\n",
        "\n\nHi",
    )


def test_a_flagged_call_stays_a_call_when_streamed(tokenizer: Any) -> None:
    parser = ToolParserManager.get_tool_parser("chatfmt-hermes")(tokenizer, TOOLS)
    text = '<tool_call>\n{"name": "nope", "arguments": {"city": "Paris"}}\n</tool_call>'
    got = stream(parser, tokenizer, text)
    assert [c["name"] for c in got["calls"].values()] == ["nope"]  # unknown tool: still a call
    whole = parser.extract_tool_calls(text, request(tools=TOOLS))
    assert [c.function.name for c in whole.tool_calls] == ["nope"]


def test_a_call_cut_off_is_no_call_in_a_whole_output(tokenizer: Any) -> None:
    parser = ToolParserManager.get_tool_parser("chatfmt-hermes")(tokenizer)
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    got = parser.extract_tool_calls(text, request())
    assert (got.tools_called, got.content) == (False, text)


def test_adjust_request_keeps_special_tokens(tokenizer: Any) -> None:
    for cls in (
        ToolParserManager.get_tool_parser("chatfmt-hermes"),
        ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3"),
    ):
        req = request(tools=TOOLS)
        assert req.skip_special_tokens is not False
        assert cls(tokenizer).adjust_request(req).skip_special_tokens is False


def test_tool_choice_left_to_vllm_by_default(tokenizer: Any) -> None:
    ours = ToolParserManager.get_tool_parser("chatfmt-hermes")
    module_path, class_name = ToolParserManager.lazy_parsers["hermes"]
    own = getattr(importlib.import_module(module_path), class_name)
    assert ours.supports_required_and_named == own.supports_required_and_named
    assert ours.structural_tag_model == own.structural_tag_model
    for choice in ("required", "auto"):
        a = ours(tokenizer).adjust_request(request(tools=TOOLS, tool_choice=choice))
        b = own(tokenizer).adjust_request(request(tools=TOOLS, tool_choice=choice))
        assert a.structured_outputs == b.structured_outputs


def test_tool_choice_by_chatfmt_constraints(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_cpp", reason="chatfmt's grammars need chatfmt[embedded]")
    monkeypatch.setenv(cv.TOOL_CHOICE_ENV, "chatfmt")
    module = importlib.reload(cv)
    try:
        cls = module.tool_parser_class("hermes")
        assert not cls.supports_required_and_named  # vLLM parses the calls with chatfmt
        req = cls(tokenizer).adjust_request(request(tools=TOOLS, tool_choice="required"))
        so = req.structured_outputs
        assert so is not None and (so.structural_tag or so.grammar)
        assert "get_weather" in (so.structural_tag or so.grammar)
    finally:
        monkeypatch.delenv(cv.TOOL_CHOICE_ENV)
        importlib.reload(module)


def test_reasoning_streams_then_hands_over(tokenizer: Any) -> None:
    parser = ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3")(tokenizer)
    reasoning, content, ended_at = "", "", None
    for i, piece in enumerate(["<think>", "\nA", " plan", "\n</think>", "\n\n", "Answer", "!"]):
        delta = parser.extract_reasoning_streaming("", "", piece, [], [], [])
        if delta is not None:
            reasoning += delta.reasoning or ""
            content += delta.content or ""
        if ended_at is None and parser.has_engine_confirmed_reasoning_end():
            ended_at = i
            flush = parser.finish_streaming()
            content += (flush.content or "") if flush else ""
            break
    # vLLM's reasoning API: the text around the markers as written (its own parsers give
    # ("\nA plan\n", "\n\nAnswer") whole); the answer starts right after </think>
    assert (reasoning, content, ended_at) == ("\nA plan\n", "", 3)
    whole = parser.extract_reasoning("<think>\nA plan\n</think>\n\nAnswer", request())
    assert whole == ("\nA plan\n", "\n\nAnswer")


def test_prompt_that_opens_thinking(tokenizer: Any) -> None:
    parser = ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3")(tokenizer)
    think, end = tokenizer.convert_tokens_to_ids(["<think>", "</think>"])
    parser.set_prompt_token_ids([1, 2, think])
    assert parser.extract_reasoning("A plan</think>Answer", request()) == ("A plan", "Answer")
    assert parser.is_reasoning_end([think, 5, end]) and not parser.is_reasoning_end([think, 5])


def test_structural_tag_models_match_vllms_parsers() -> None:
    for name, model in cv.XGRAMMAR_MODELS.items():
        module_path, class_name = ToolParserManager.lazy_parsers[name]
        own = getattr(importlib.import_module(module_path), class_name)
        assert own.structural_tag_model == model, name
        assert cv.tool_parser_class(name).structural_tag_model == model


def test_thinking_switched_off_by_the_request(tokenizer: Any) -> None:
    cls = ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3")
    parser = cls(tokenizer, chat_template_kwargs={"enable_thinking": False})
    assert parser.extract_reasoning("Just the answer.", request()) == (None, "Just the answer.")
    assert cls(tokenizer).extract_reasoning("Thinking</think>Answer", request()) == (
        "Thinking",
        "Answer",
    )


def test_thinking_off_ends_reasoning_from_the_start(tokenizer: Any) -> None:
    cls = ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3")
    parser = cls(tokenizer, chat_template_kwargs={"enable_thinking": False})
    ids = tokenizer.encode("Just the answer.")
    assert parser.is_reasoning_end([]) and parser.is_reasoning_end(ids)
    assert parser.count_reasoning_tokens(ids) == 0 and parser.extract_content_ids(ids) == ids
    on = cls(tokenizer)
    assert not on.is_reasoning_end(ids) and on.count_reasoning_tokens(ids) == len(ids)


def test_empty_reasoning_block_is_an_empty_string_whole(tokenizer: Any) -> None:
    parser = ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3")(tokenizer)
    assert parser.extract_reasoning("</think>Answer", request()) == ("", "Answer")
    off = ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3")(
        tokenizer, chat_template_kwargs={"enable_thinking": False}
    )
    assert off.extract_reasoning("Answer", request()) == (None, "Answer")


def test_previous_text_not_fed_is_caught_up(tokenizer: Any) -> None:
    """A caller without engine-based streaming passes the text so far: the adapter feeds what
    it has not seen (counted as sent) and returns only what the new text adds."""
    parser = ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3")(tokenizer)
    delta = parser.extract_reasoning_streaming("A plan</thi", "", "nk>Answer", [], [], [])
    assert delta is not None and (delta.reasoning, delta.content) == (None, "Answer")
    assert parser.has_engine_confirmed_reasoning_end()


def test_a_call_ends_the_reasoning_in_token_ids_too(tokenizer: Any) -> None:
    """vLLM hands the ids after the reasoning to the tool parser: from the <tool_call> that
    ended the block, as the text stream reads it."""
    parser = ReasoningParserManager.get_reasoning_parser("chatfmt-qwen3")(tokenizer)
    think, call = tokenizer.convert_tokens_to_ids(["<think>", "<tool_call>"])
    plan = tokenizer.encode("I need to read.\n\n")
    ids = [think, *plan, call, 5, 6]
    assert parser.is_reasoning_end(ids) and not parser.is_reasoning_end([think, *plan])
    assert parser.extract_content_ids(ids) == [call, 5, 6]
    assert parser.extract_content_ids([*plan, call, 5]) == [call, 5]  # the prompt opened it
