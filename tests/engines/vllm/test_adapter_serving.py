"""vLLM's own chat serving code (``OpenAIServingChat``) with chatfmt's parsers, no model.

A fake engine yields the token ids of a model output one token at a time, as vLLM's engine
does; the serving layer is configured as ``vllm serve … --enable-auto-tool-choice
--tool-call-parser chatfmt-<name> --reasoning-parser chatfmt-<name>`` (and the
template-derived ``chatfmt``), streamed and whole. Runs in the vLLM test environment
(``tests/engines/vllm/setup.sh``); skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest

pytest.importorskip("vllm.tool_parsers", reason="vLLM is not installed (tests/engines/vllm/setup.sh)")

from vllm.config import MultiModalConfig
from vllm.entrypoints.generate.base.protocol import RequestResponseMetadata
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionRequest,
    ChatCompletionResponse,
)
from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat
from vllm.entrypoints.openai.models.serving import (
    BaseModelPath,
    OpenAIServingModels,
)
from vllm.outputs import CompletionOutput, RequestOutput
from vllm.renderers.hf import HfRenderer
from vllm.renderers.online_renderer import OnlineRenderer
from vllm.tokenizers.registry import cached_tokenizer_from_config

import chatfmt.integrations.vllm  # noqa: F401  (registers the parsers)

TOKENIZERS = Path(os.environ.get("CHATFMT_SHARED", Path(__file__).parents[4] / "shared")) / (
    "tokenizers"
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
ARGS = {"city": "Paris", "days": 3}

#: (tokenizer, tool parser, reasoning parser, model output): formats vLLM's tests cover, on
#: the local tokenizers that decode them as written (the local DeepSeek V3 tokenizer's
#: decoder writes its markers' "▁" as spaces, so it cannot carry DeepSeek's format here; the
#: local Llama 3.1 tokenizer's chat template has no tool calls to derive a parser from).
CASES = {
    "hermes+qwen3": (
        "qwen3",
        "chatfmt-hermes",
        "chatfmt-qwen3",
        "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>',
    ),
    "template (qwen3)": (
        "qwen3",
        "chatfmt",
        "chatfmt",
        "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>',
    ),
    "llama3_json": (
        "llama3_1",
        "chatfmt-llama3_json",
        None,
        '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}',
    ),
    "pythonic": ("qwen3", "chatfmt-pythonic", None, '[get_weather(city="Paris", days=3)]'),
    "mistral": (
        "qwen3",
        "chatfmt-mistral",
        None,
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]',
    ),
    "qwen3_coder": (
        "qwen3",
        "chatfmt-qwen3_coder",
        "chatfmt-qwen3",
        "<think>\nweather\n</think>\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
        "</function>\n</tool_call>",
    ),
}


@dataclass
class _HFConfig:
    model_type: str = "any"


@dataclass
class _ModelConfig:
    """The fields of vLLM's ModelConfig that the chat serving code reads."""

    tokenizer: str = ""
    model: str = "chatfmt-test"
    task = "generate"
    runner_type = "generate"
    trust_remote_code = False
    tokenizer_mode = "auto"
    max_model_len = 4096
    revision = None
    code_revision = None
    tokenizer_revision = None
    multimodal_config: Any = field(default_factory=MultiModalConfig)
    hf_config: Any = field(default_factory=_HFConfig)
    hf_text_config: Any = field(default_factory=_HFConfig)
    logits_processors: Any = None
    diff_sampling_param: Any = None
    allowed_local_media_path: str = ""
    allowed_media_domains: Any = None
    encoder_config = None
    generation_config: str = "auto"
    override_generation_config: dict[str, Any] = field(default_factory=dict)
    media_io_kwargs: dict[str, Any] = field(default_factory=dict)
    skip_tokenizer_init: bool = False
    is_encoder_decoder: bool = False
    is_multimodal_model: bool = False
    supports_multimodal_inputs: bool = False
    renderer_num_workers: int = 1
    enable_prompt_embeds: bool = False

    def get_diff_sampling_param(self) -> dict[str, Any]:
        return {}

    def get_vocab_size(self) -> int:
        return 200_000


@dataclass
class _ParallelConfig:
    _api_process_rank: int = 0


@dataclass
class _VllmConfig:
    model_config: Any
    parallel_config: Any


@dataclass
class FakeEngine:
    """What OpenAIServingChat needs of an engine client (generation is fed by the test)."""

    model_config: Any
    renderer: Any = None
    input_processor: Any = field(default_factory=MagicMock)
    errored: bool = False

    def check_admission(self, n: int = 1, request_id: str | None = None) -> None:
        return None


def serving(folder: str, tool_parser: str | None, reasoning_parser: str | None) -> Any:
    """``OpenAIServingChat`` as ``vllm serve`` builds it, over a fake engine."""
    path = TOKENIZERS / folder
    if not path.exists():
        pytest.skip(f"no local tokenizer {path}")
    config = _ModelConfig(tokenizer=str(path), model=str(path))
    engine = FakeEngine(config)
    engine.renderer = HfRenderer(
        _VllmConfig(config, _ParallelConfig()), cached_tokenizer_from_config(config)
    )
    models = OpenAIServingModels(engine, [BaseModelPath(name="m", model_path=str(path))])
    online = OnlineRenderer(
        model_config=config,
        renderer=engine.renderer,
        request_logger=None,
        chat_template=None,
        chat_template_content_format="auto",
    )
    return OpenAIServingChat(
        engine,
        models,
        response_role="assistant",
        online_renderer=online,
        chat_template=None,
        chat_template_content_format="auto",
        request_logger=None,
        reasoning_parser=reasoning_parser or "",
        tool_parser=tool_parser,
        enable_auto_tools=True,
    )


def _outputs(tokenizer: Any, text: str, step: int) -> list[RequestOutput]:
    """The engine's outputs for ``text``: ``step`` tokens at a time, then the finish."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    out, sent = [], ""
    for i in range(0, len(ids), step):
        decoded = tokenizer.decode(ids[: i + step], skip_special_tokens=False)
        delta, sent = decoded[len(sent) :], decoded
        out.append(_output([CompletionOutput(0, delta, ids[i : i + step], 0.0, None)], False))
    last = out[-1].outputs[0]
    last.finish_reason = "stop"
    out[-1].finished = True
    return out


def _output(outputs: list[CompletionOutput], finished: bool) -> RequestOutput:
    return RequestOutput("r", "p", [1, 2, 3], None, outputs, finished)


async def _aiter(items: list[Any]) -> Any:
    for item in items:
        yield item


def _request(stream: bool) -> ChatCompletionRequest:
    return ChatCompletionRequest(
        model="m",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        tool_choice="auto",
        stream=stream,
    )


def _metadata() -> RequestResponseMetadata:
    return RequestResponseMetadata(request_id="r", model_name="m")


def run_streamed(chat: Any, text: str, step: int = 1) -> dict[str, Any]:
    """Stream ``text`` through the chat serving code; the client's view of the message."""
    tokenizer = chat.renderer.tokenizer
    request = _request(True)
    request = chat.parser_cls(tokenizer, request.tools).adjust_request(request)

    async def collect() -> list[str]:
        return [
            frame
            async for frame in chat.chat_completion_stream_generator(
                request=request,
                result_generator=_aiter(_outputs(tokenizer, text, step)),
                request_id="r",
                model_name="m",
                conversation=[],
                tokenizer=tokenizer,
                request_metadata=_metadata(),
            )
        ]

    message: dict[str, Any] = {"content": "", "reasoning": "", "calls": {}, "finish": None}
    for frame in asyncio.run(collect()):
        if not frame.startswith("data: {"):
            continue
        data = json.loads(frame[6:])
        assert "error" not in data, data
        for choice in data["choices"]:
            delta = choice.get("delta", {})
            message["content"] += delta.get("content") or ""
            message["reasoning"] += delta.get("reasoning") or ""
            for call in delta.get("tool_calls") or []:
                entry = message["calls"].setdefault(call["index"], {"name": "", "arguments": ""})
                fn = call.get("function") or {}
                if fn.get("name"):
                    assert not entry["name"], "a call's name is sent once"
                    entry["name"] = fn["name"]
                entry["arguments"] += fn.get("arguments") or ""
            message["finish"] = choice.get("finish_reason") or message["finish"]
    return message


def run_whole(chat: Any, text: str) -> Any:
    """The non-streaming response for ``text``."""
    tokenizer = chat.renderer.tokenizer
    request = _request(False)
    parser = chat.parser_cls(tokenizer, request.tools)
    request = parser.adjust_request(request)
    outputs = _outputs(tokenizer, text, 10**9)
    response = asyncio.run(
        chat.chat_completion_full_generator(
            request=request,
            result_generator=_aiter(outputs),
            request_id="r",
            model_name="m",
            conversation=[],
            tokenizer=tokenizer,
            request_metadata=_metadata(),
            parser=parser,
        )
    )
    assert isinstance(response, ChatCompletionResponse), response
    return response.choices[0]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("step", [1, 3])
def test_streamed(case: str, step: int) -> None:
    folder, tool, reasoning, text = CASES[case]
    got = run_streamed(serving(folder, tool, reasoning), text, step)
    assert [(c["name"], json.loads(c["arguments"])) for c in got["calls"].values()] == [
        ("get_weather", ARGS)
    ]
    assert got["finish"] == "tool_calls"
    if reasoning is not None:
        assert got["reasoning"].strip()
        assert "<think>" not in got["content"] and "</think>" not in got["content"]
    assert "get_weather" not in got["content"]


@pytest.mark.parametrize("case", CASES)
def test_whole(case: str) -> None:
    folder, tool, reasoning, text = CASES[case]
    choice = run_whole(serving(folder, tool, reasoning), text)
    calls = choice.message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", ARGS)
    ]
    assert choice.finish_reason == "tool_calls"
    if reasoning is not None:
        assert (choice.message.reasoning or "").strip()
    assert "get_weather" not in (choice.message.content or "")


def test_streamed_equals_whole() -> None:
    folder, tool, reasoning, text = CASES["hermes+qwen3"]
    chat = serving(folder, tool, reasoning)
    streamed = run_streamed(chat, text)
    whole = run_whole(chat, text)
    assert streamed["reasoning"] == whole.message.reasoning
    assert streamed["content"].strip() == (whole.message.content or "").strip()
    assert streamed["calls"][0]["arguments"] == whole.message.tool_calls[0].function.arguments


def test_plain_answer_has_no_calls() -> None:
    chat = serving("qwen3", "chatfmt-hermes", "chatfmt-qwen3")
    text = "<think>\nEasy.\n</think>\n\nHello there, how are you?"
    got = run_streamed(chat, text)
    assert (got["reasoning"], got["content"], got["calls"]) == (
        "Easy.",
        "Hello there, how are you?",
        {},
    )
    assert got["finish"] == "stop"
    choice = run_whole(chat, text)
    assert (choice.message.reasoning, choice.message.content) == ("Easy.", got["content"])
