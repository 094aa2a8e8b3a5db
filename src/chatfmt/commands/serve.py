"""``chatfmt serve``: an OpenAI-compatible chat API in front of a raw completions backend."""

from __future__ import annotations

import asyncio
import errno
import gc
import json
import os
import secrets
import shutil
import socket
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import ChatFmtError
from ._shared import PairedToolFormat, fail

#: The environment variable a worker process reads its configuration from (``--workers``).
_WORKER_CONFIG = "CHATFMT_SERVE_WORKER_CONFIG"


def _specs(
    config: Path | None,
    backend: str | tuple[str, ...],
    template: str | None,
    tokenizer: str | None,
    model_name: str | None,
    backend_model: str | None,
    backend_api_key: str | None,
    model_path: str | None,
    tool_format: str | None = None,
    backend_kind: str = "auto",
    tool_parser: str | None = None,
    strict_history: bool = False,
) -> tuple[list[Any], Any]:
    from ..gateway.config import ModelSpec, load_config
    from ..gateway.models import Limits

    if config is not None:
        specs, limits = load_config(config)
        # --backend-api-key: the key of every model whose table names none;
        # --strict-history: every model strict.
        return [
            replace(
                s,
                backend_api_key=s.backend_api_key or backend_api_key,
                strict_history=s.strict_history or strict_history,
            )
            for s in specs
        ], limits
    spec = ModelSpec(
        name=model_name or "",  # "": the embedded model's file stem, else the template's name
        backend=backend,
        template=template,
        tokenizer=tokenizer,
        backend_model=backend_model,
        backend_api_key=backend_api_key,
        model_path=model_path,
        tool_format=tool_format,
        tool_parser=tool_parser,
        backend_kind=backend_kind,
        strict_history=strict_history,
    )
    return [spec], Limits()


def build_app(
    specs: list[Any],
    limits: Any,
    api_key: str | None,
    trust_templates: bool = False,
    playground_tokenizer: str | None = None,
    thinking_secret: str | None = None,
) -> Any:
    """The Starlette application for ``specs`` (backends, templates and tokenizers loaded),
    with the playground at ``/``."""
    from ..gateway import create_app
    from ..gateway.config import build_model
    from ..gateway.playground import Playground
    from ..tokens import load_tokenizer

    async def build_all() -> list[Any]:
        return [await build_model(spec) for spec in specs]

    # In a thread of its own: a worker process builds its app inside uvicorn's running loop.
    with ThreadPoolExecutor(max_workers=1) as thread:
        entries = thread.submit(asyncio.run, build_all()).result() if specs else []
    tokenizer = load_tokenizer(playground_tokenizer) if playground_tokenizer else None
    if tokenizer is None and len(entries) == 1:
        tokenizer = entries[0].active_tokenizer
    playground = Playground(trust_request_templates=trust_templates, tokenizer=tokenizer)
    return create_app(
        {e.name: e for e in entries},
        api_key=api_key,
        limits=limits,
        playground=playground,
        thinking_secret=thinking_secret,
    )


def _settled(app: Any) -> Any:
    """``app``, with what is alive once it is built (modules, templates, tokenizers, the
    application) moved out of the garbage collector's way (:func:`gc.freeze`): a server's
    full collections, which 200 streams in flight make frequent, then traverse only what
    requests created, not the ≈ 60,000 long-lived objects every time."""
    gc.collect()
    gc.freeze()
    return app


def worker_app() -> Any:
    """The application of one ``--workers`` process (configured by its parent)."""
    from ..gateway.config import ModelSpec
    from ..gateway.models import Limits

    data = json.loads(os.environ[_WORKER_CONFIG])
    specs = [ModelSpec(**s) for s in data["models"]]
    app = build_app(
        specs,
        Limits(**data["limits"]),
        data["api_key"],
        data["trust_templates"],
        data["tokenizer"],
        data["thinking_secret"],
    )
    return _settled(app)


def serve_cmd(
    backend: Annotated[
        list[str] | None,
        typer.Option(
            "--backend",
            help="OpenAI-compatible completions URL ending in /v1, or 'embedded'; repeat it "
            "for one model served by several engines (a pool).",
        ),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option(
            "--template", "-t", help="Template (default: the model's own / the server's model id)."
        ),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="Tokenizer path: token ids, usage, prompt-length check."),
    ] = None,
    model_name: Annotated[
        str | None, typer.Option("--model-name", help="The model name clients ask for.")
    ] = None,
    backend_model: Annotated[
        str | None,
        typer.Option(
            "--backend-model", help="Model name sent to the backend (default: its first)."
        ),
    ] = None,
    model_path: Annotated[
        str | None, typer.Option("--model-path", help="A GGUF file for the embedded backend.")
    ] = None,
    tool_format: PairedToolFormat = None,
    tool_parser: Annotated[
        str | None,
        typer.Option(
            "--tool-parser",
            help="Read tool calls with this tool parser (e.g. pythonic) instead of the "
            "template's, as vLLM's --tool-call-parser.",
        ),
    ] = None,
    backend_kind: Annotated[
        str,
        typer.Option(
            "--backend-kind",
            help="The engine behind --backend, for its constraint fields: auto (detect), "
            "llama.cpp, llama-cpp-python, vllm, sglang, generic.",
        ),
    ] = "auto",
    config: Annotated[
        Path | None,
        typer.Option("--config", help="TOML file mapping model names to backends (see docs)."),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option("--workers", help="Worker processes.", min=1)] = 1,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="CHATFMT_API_KEY",
            help="Require 'Authorization: Bearer KEY' from clients.",
            show_envvar=True,
        ),
    ] = None,
    backend_api_key: Annotated[
        str | None,
        typer.Option(
            "--backend-api-key",
            envvar="CHATFMT_BACKEND_API_KEY",
            help="API key sent to the backend (never shown in errors or logs).",
            show_envvar=True,
        ),
    ] = None,
    thinking_secret: Annotated[
        str | None,
        typer.Option(
            "--thinking-secret",
            envvar="CHATFMT_THINKING_SECRET",
            help="Key of the signatures of Anthropic thinking blocks (default: random per "
            "start); gateways that share conversations must share it.",
            show_envvar=True,
        ),
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn's log level.")] = "info",
    loop: Annotated[
        str,
        typer.Option(
            "--loop",
            help="The event loop: auto (uvloop when installed), asyncio or uvloop "
            "(uvicorn's --loop; docs/performance.md compares them).",
        ),
    ] = "auto",
    trust_request_chat_template: Annotated[
        bool,
        typer.Option(
            "--trust-request-chat-template",
            help="Accept chat templates sent with requests (run sandboxed, with limits).",
        ),
    ] = False,
    strict_history: Annotated[
        bool,
        typer.Option(
            "--strict-history",
            help="Render history only as the official template does: a 400 for text beside "
            "tool calls it would drop (by default written as the model writes it).",
        ),
    ] = False,
) -> None:
    """Serve OpenAI's chat API (/v1/chat/completions, /v1/responses, /v1/completions) and
    Anthropic's Messages API (/v1/messages) over a completions backend (or several engines:
    --backend repeated), and the playground page at /."""
    try:
        import uvicorn
    except ImportError:
        raise fail("chatfmt serve needs the serve extra: pip install 'chatfmt[serve]'") from None
    if loop not in ("auto", "asyncio", "uvloop"):
        raise fail(f"--loop must be auto, asyncio or uvloop, got {loop!r}")
    check_port(host, port)
    per_model = (
        template,
        tokenizer,
        model_name,
        backend_model,
        model_path,
        tool_format,
        tool_parser,
    )
    backends = tuple(backend or ["embedded"])
    if config is not None and (any(per_model) or backend or backend_kind != "auto"):
        raise fail(
            "--config describes the models: leave out --backend, --backend-kind, --template, "
            "--tokenizer, --model-name, --backend-model, --model-path, --tool-format and "
            "--tool-parser"
        )
    metrics_dir = _metrics_dir() if workers > 1 else None
    try:
        specs, limits = _specs(
            config,
            backends[0] if len(backends) == 1 else backends,
            template,
            tokenizer,
            model_name,
            backend_model,
            backend_api_key,
            model_path,
            tool_format,
            backend_kind,
            tool_parser,
            strict_history,
        )
        # with --workers: checks the configuration
        if workers > 1 and thinking_secret is None:  # one secret for every worker
            thinking_secret = secrets.token_hex(32)
        app = build_app(
            specs, limits, api_key, trust_request_chat_template, thinking_secret=thinking_secret
        )
        typer.secho(
            f"chatfmt serve: {', '.join(app.state.model_names)} on http://{host}:{port}/v1"
            + (" (API key required)" if api_key else "")
            + f"; playground on http://{host}:{port}/",
            err=True,
        )
        if workers > 1:
            os.environ[_WORKER_CONFIG] = json.dumps(
                {
                    "models": [asdict(s) for s in specs],
                    "limits": asdict(limits),
                    "api_key": api_key,
                    "trust_templates": trust_request_chat_template,
                    "tokenizer": None,
                    "thinking_secret": thinking_secret,
                }
            )
            uvicorn.run(
                "chatfmt.commands.serve:worker_app",
                factory=True,
                host=host,
                port=port,
                workers=workers,
                log_level=log_level,
                loop=loop,
            )
            return
    except ChatFmtError as exc:
        raise fail(str(exc)) from None
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    uvicorn.run(_settled(app), host=host, port=port, log_level=log_level, loop=loop)


def _metrics_dir() -> str | None:
    """With ``--workers``: a fresh directory where the workers' metrics meet (prometheus-client's
    multiprocess mode), set before any of them starts; ``None`` when the environment names
    one already (it is then the caller's to empty)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return None
    path = tempfile.mkdtemp(prefix="chatfmt-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    return path


def check_port(host: str, port: int) -> None:
    """Fail in one line, before anything is loaded, when ``host:port`` cannot be listened on
    (another server has it, or the address is not this machine's)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise fail(
                    f"port {port} on {host} is already in use (another server?); "
                    "choose another with --port"
                ) from None
            raise fail(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def playground_cmd(
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="Tokenizer path: show token ids and decoded pieces."),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    trust_request_chat_template: Annotated[
        bool,
        typer.Option(
            "--trust-request-chat-template",
            help="Accept pasted/uploaded Jinja templates (run sandboxed, with limits).",
        ),
    ] = False,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in a browser.")
    ] = True,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn's log level.")] = "warning",
) -> None:
    """Open the playground without a model: see what any template does to a conversation."""
    try:
        import uvicorn
    except ImportError:
        raise fail(
            "chatfmt playground needs the serve extra: pip install 'chatfmt[serve]'"
        ) from None
    from ..gateway.models import Limits

    check_port(host, port)
    try:
        app = build_app([], Limits(), None, trust_request_chat_template, tokenizer)
    except ChatFmtError as exc:
        raise fail(str(exc)) from None
    url = f"http://{host}:{port}/"
    typer.secho(f"chatfmt playground on {url}", err=True)
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
    app.command("playground")(playground_cmd)
