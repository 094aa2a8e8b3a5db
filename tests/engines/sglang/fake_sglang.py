"""SGLang's real ``OpenAIServingChat`` over a fake tokenizer manager (no model, no GPU).

:func:`serving_chat` publishes SGLang's runtime config for a model folder that holds only a
config and a real tokenizer (no weights), with parsers chosen by name as ``--tool-call-parser``
and ``--reasoning-parser`` would, and builds SGLang's own chat handler on a tokenizer manager
whose ``generate_request`` yields given output pieces as SGLang's engine does (cumulative
``text``, the step's ``output_ids``, ``finish_reason`` on the last; one result when the
request is not streamed). :func:`run_chat` calls it
and returns the SSE event dicts or the whole response. Shared by the test and the benchmark.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest.mock import Mock

import cpu_torchvision
from engine_pieces import sse_events

cpu_torchvision.declare()

from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest  # noqa: E402
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat  # noqa: E402

MODEL = "fake-model"
_CONFIG = {
    "model_type": "qwen3",
    "architectures": ["Qwen3ForCausalLM"],
    "vocab_size": 151936,
    "hidden_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "intermediate_size": 128,
    "max_position_embeddings": 4096,
    "head_dim": 32,
}


def fake_model_dir(tokenizer_dir: Path) -> Path:
    """A model folder with a Qwen3 config and the tokenizer's files (no weights)."""
    folder = Path(tempfile.mkdtemp(prefix="chatfmt-fake-qwen3-"))
    (folder / "config.json").write_text(json.dumps(_CONFIG))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).symlink_to(tokenizer_dir / name)
    return folder


class FakeTokenizerManager:
    """What ``OpenAIServingChat`` reads from SGLang's tokenizer manager."""

    def __init__(self, server_args: Any, tokenizer: Any) -> None:
        self.server_args = server_args
        self.model_config = Mock(is_multimodal=False)
        self.model_config.hf_config = Mock(
            architectures=_CONFIG["architectures"], model_type="qwen3"
        )
        self.model_config.get_default_sampling_params.return_value = {}
        self.tokenizer = tokenizer
        self.served_model_name = MODEL
        self.model_path = server_args.model_path
        self.create_abort_task = Mock()
        self.request_logger = Mock(log_requests=False, log_requests_level=0)
        self.pieces: Sequence[tuple[str, list[int]]] = ()

    def config_value(self, name: str) -> Any:
        return getattr(self.server_args, name)

    def generate_request(self, adapted: Any, raw_request: Any = None) -> Any:
        pieces = self.pieces
        if not getattr(adapted, "stream", False):  # one result: the whole output
            text = "".join(p for p, _ in pieces)
            pieces = [(text, [i for _, ids in pieces for i in ids])]

        async def stream() -> Any:
            text = ""
            for n, (piece, ids) in enumerate(pieces):
                text += piece
                last = n == len(pieces) - 1
                yield {
                    "text": text,
                    "output_ids": ids,
                    "index": 0,
                    "meta_info": {
                        "id": "chatcmpl-fake",
                        "prompt_tokens": 4,
                        "completion_tokens": n + 1,
                        "cached_tokens": 0,
                        "weight_version": "default",
                        "finish_reason": {"type": "stop", "matched": None} if last else None,
                    },
                }

        return stream()


def serving_chat(
    model_dir: Path, tokenizer: Any, tool_parser: str | None, reasoning_parser: str | None
) -> tuple[OpenAIServingChat, FakeTokenizerManager]:
    """SGLang's chat handler, configured as ``sglang serve --tool-call-parser …`` would be."""
    from sglang.srt.runtime_context import ROLE_NAMESPACE_SETS, publish
    from sglang.srt.server_args import ServerArgs

    args = ServerArgs(
        model_path=str(model_dir),
        tool_call_parser=tool_parser,
        reasoning_parser=reasoning_parser,
        device="cpu",
    )
    publish(args, role=next(iter(ROLE_NAMESPACE_SETS)))
    manager = FakeTokenizerManager(args, tokenizer)
    templates = Mock(
        chat_template_name=None,
        jinja_template_content_format="string",
        completion_template_name=None,
        reasoning_config=None,
        force_reasoning=False,
        python_chat_template=None,
    )
    return OpenAIServingChat(manager, templates), manager


def run_chat(
    chat: OpenAIServingChat,
    manager: FakeTokenizerManager,
    pieces: Sequence[tuple[str, list[int]]],
    payload: dict[str, Any],
) -> Any:
    """One request: the SSE event dicts when ``payload["stream"]``, else the response dict."""
    manager.pieces = pieces
    raw = Mock(headers={})

    async def call() -> Any:
        response = await chat.handle_request(ChatCompletionRequest(**payload), raw)
        if hasattr(response, "model_dump"):  # the whole response
            return response.model_dump(mode="json")
        if not hasattr(response, "body_iterator"):  # an error response
            return json.loads(response.body)
        return await sse_events(response.body_iterator)

    return asyncio.run(call())
