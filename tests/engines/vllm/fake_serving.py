"""vLLM's chat serving code over a fake engine: what the serving tests and the benchmark share.

``serving(tokenizer_dir, tool_parser, reasoning_parser)`` builds ``OpenAIServingChat`` as
``vllm serve … --enable-auto-tool-choice`` does, over an engine client that generates nothing:
``outputs(tokenizer, text, step)`` makes the engine's outputs for a model output (its token
ids, ``step`` at a time) and ``run_streamed``/``run_whole`` feed them through the streaming
and the non-streaming generators. Needs vLLM (tests/engines/vllm/setup.sh).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

from vllm.config import MultiModalConfig
from vllm.entrypoints.generate.base.protocol import RequestResponseMetadata
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionRequest,
    ChatCompletionResponse,
)
from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat
from vllm.entrypoints.openai.models.serving import BaseModelPath, OpenAIServingModels
from vllm.outputs import CompletionOutput, RequestOutput
from vllm.renderers.hf import HfRenderer
from vllm.renderers.online_renderer import OnlineRenderer
from vllm.tokenizers.registry import cached_tokenizer_from_config

import chatfmt.integrations.vllm  # noqa: F401  (registers the parsers)

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


def serving(path: Path, tool_parser: str | None, reasoning_parser: str | None) -> Any:
    """``OpenAIServingChat`` as ``vllm serve`` builds it, over a fake engine."""
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
        enable_auto_tools=True,
        tool_parser=tool_parser,
        reasoning_parser=reasoning_parser,
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


#: Tokens of context the fake detokenizer decodes each step with.
_CONTEXT = 6


def outputs(tokenizer: Any, text: str, step: int) -> list[RequestOutput]:
    """The engine's outputs for ``text``: ``step`` tokens at a time, then the finish."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    out = []
    for i in range(0, len(ids), step):
        # the new text of these tokens, decoded after a few tokens of context (linear, as an
        # engine's incremental detokenizer is)
        lo = max(0, i - _CONTEXT)
        before = tokenizer.decode(ids[lo:i], skip_special_tokens=False)
        upto = tokenizer.decode(ids[lo : i + step], skip_special_tokens=False)
        delta = upto[len(before) :]
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


def frames(chat: Any, engine_outputs: list[RequestOutput]) -> list[str]:
    """The server-sent events of the streaming generator for the engine's outputs."""
    tokenizer = chat.renderer.tokenizer
    request = _request(True)
    if chat.parser_cls is not None:
        request = chat.parser_cls(tokenizer, request.tools).adjust_request(request)

    async def collect() -> list[str]:
        return [
            frame
            async for frame in chat.chat_completion_stream_generator(
                request=request,
                result_generator=_aiter(engine_outputs),
                request_id="r",
                model_name="m",
                conversation=[],
                tokenizer=tokenizer,
                request_metadata=_metadata(),
            )
        ]

    return asyncio.run(collect())


def run_streamed(chat: Any, text: str, step: int = 1) -> dict[str, Any]:
    """Stream ``text`` through the chat serving code; the client's view of the message."""
    sent = frames(chat, outputs(chat.renderer.tokenizer, text, step))
    message: dict[str, Any] = {"content": "", "reasoning": "", "calls": {}, "finish": None}
    for frame in sent:
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
    whole = outputs(tokenizer, text, 10**9)
    response = asyncio.run(
        chat.chat_completion_full_generator(
            request=request,
            result_generator=_aiter(whole),
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


def run_request(chat: Any, request: ChatCompletionRequest, text: str) -> tuple[Any, Any]:
    """``request`` through the whole chat endpoint (``create_chat_completion``: the parser's
    ``adjust_request``, the prompt, the sampling parameters) over an engine that "generates"
    ``text``. Returns the sampling parameters the engine got, and the response: the list of
    server-sent event payloads (streamed) or the ``ChatCompletionResponse``."""
    tokenizer = chat.renderer.tokenizer
    got: dict[str, Any] = {}

    def generate(prompt: Any, params: Any, request_id: str, **_kwargs: Any) -> Any:
        got["params"] = params
        return _aiter(outputs(tokenizer, text, 1 if request.stream else 10**9))

    chat.engine_client.generate = generate

    async def call() -> Any:
        response = await chat.create_chat_completion(request)
        if not hasattr(response, "__aiter__"):
            return response
        return [json.loads(frame[6:]) async for frame in response if frame.startswith("data: {")]

    response = asyncio.run(call())
    assert not hasattr(response, "error"), response
    return got.get("params"), response
