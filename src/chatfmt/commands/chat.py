"""``chatfmt chat``: talk to a model (embedded or behind an OpenAI-compatible server) with tools."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ._shared import PairedToolFormat, fail


def load_tool(spec: str) -> Callable[..., Any]:
    """``module:function`` → the function (the module is imported from the cwd or PYTHONPATH)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise fail(f"--tool {spec!r}: expected module:function")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise fail(f"--tool {spec!r}: cannot import {module_name!r}: {exc}") from None
    fn = getattr(module, attr, None)
    if fn is None:
        raise fail(f"--tool {spec!r}: module {module_name!r} has no {attr!r}")
    return fn


def _backend(urls: list[str] | None, model: str | None, model_path: Path | None) -> Any:
    if urls:
        from ..backends.openai import OpenAICompletionsBackend
        from ..backends.pool import PoolBackend

        engines = [OpenAICompletionsBackend(url, model=model) for url in urls]
        return engines[0] if len(engines) == 1 else PoolBackend(engines)
    from ..backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(model_path)


async def _template_for(backend: Any, template: str | None, tool_format: str | None) -> Any:
    """The template: given, else the embedded model's own, else the server's model id's;
    paired with ``tool_format`` (default: the template's own, else its default pairing)."""
    from ..api import get_template
    from ..registry import REGISTRY
    from ..tool_format import resolve_tool_format

    if template is not None:
        found = get_template(template)
    elif getattr(backend, "model_path", None) is not None:
        found = get_template(Path(backend.model_path))
    else:
        model = await backend.model_id()
        matched = REGISTRY.match_model(model)
        if matched is None:
            raise fail(f"no template matches the server's model {model!r}: pass --template")
        found = matched
    return resolve_tool_format(found, tool_format)


class _Printer:
    """Streams agent events to the terminal with rich."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.mode = ""

    def _switch(self, mode: str) -> None:
        if self.mode and self.mode != mode:
            self.console.print()
        self.mode = mode

    def event(self, event: Any) -> None:
        from ..agent.events import ReasoningDelta, TextDelta, ToolResult, ToolStart

        if isinstance(event, TextDelta):
            self._switch("text")
            self.console.print(event.text, end="", markup=False, highlight=False)
        elif isinstance(event, ReasoningDelta):
            self._switch("reasoning")
            self.console.print(event.text, end="", style="dim italic", markup=False)
        elif isinstance(event, ToolStart):
            self._switch("tool")
            args = (
                event.arguments
                if isinstance(event.arguments, str)
                else json.dumps(event.arguments, ensure_ascii=False)
            )
            self.console.print(f"→ {event.name}({args})", style="cyan", markup=False)
        elif isinstance(event, ToolResult):
            self._switch("tool")
            style = "red" if event.error else "green"
            self.console.print(f"← {event.content}", style=style, markup=False)

    def end(self) -> None:
        if self.mode:
            self.console.print()
        self.mode = ""


def chat_cmd(
    message: Annotated[
        str | None, typer.Option("--message", "-m", help="Answer this one message and exit.")
    ] = None,
    template: Annotated[
        str | None,
        typer.Option("--template", "-t", help="Template (default: the model's own)."),
    ] = None,
    backend_url: Annotated[
        list[str] | None,
        typer.Option(
            "--backend",
            help="OpenAI-compatible base URL ending in /v1 (default: embedded model); repeat "
            "it for several engines of the same model.",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name on the server.")] = None,
    model_path: Annotated[
        Path | None,
        typer.Option("--model-path", help="A local GGUF file for the embedded backend."),
    ] = None,
    tools: Annotated[
        list[str] | None,
        typer.Option("--tool", help="A tool as module:function (repeatable)."),
    ] = None,
    tool_format: PairedToolFormat = None,
    tool_choice: Annotated[
        str,
        typer.Option(
            "--tool-choice",
            help="auto, required, none or a tool's name: what the model's first reply of each "
            "message must be (a call is then guaranteed valid where the engine takes a grammar).",
        ),
    ] = "auto",
    parallel_tool_calls: Annotated[
        bool,
        typer.Option(
            "--parallel-tool-calls/--one-tool-call",
            help="Whether a reply may hold several calls.",
        ),
    ] = True,
    interpreter: Annotated[
        bool, typer.Option("--interpreter", help="Give the model a Jupyter code interpreter.")
    ] = False,
    interpreter_timeout: Annotated[
        float | None,
        typer.Option(
            "--interpreter-timeout",
            min=0.001,
            help="Seconds one execution of the code interpreter may take (default 60); "
            "implies --interpreter.",
        ),
    ] = None,
    system: Annotated[str | None, typer.Option("--system", help="A system message.")] = None,
    max_turn: Annotated[int, typer.Option("--max-turn", help="Model calls per message.")] = 5,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", help="Token limit of each model call.")
    ] = 512,
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="Sampling temperature.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Sampling seed.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole agent return as JSON (with -m).")
    ] = False,
) -> None:
    """Chat with a model: streamed answers, tools, a code interpreter.

    Ctrl-C stops the answer being generated; Ctrl-D (or /exit) ends the session.
    """
    from rich.console import Console

    from ..agent.loop import Agent

    console = Console(highlight=False)
    fns = [load_tool(spec) for spec in tools or []]
    sampling: dict[str, Any] = {"max_tokens": max_tokens}
    if temperature is not None:
        sampling["temperature"] = temperature
    if seed is not None:
        sampling["seed"] = seed
    loop = asyncio.new_event_loop()
    agent: Agent | None = None
    try:
        backend = _backend(backend_url, model, model_path)
        tpl = loop.run_until_complete(_template_for(backend, template, tool_format))
        agent = Agent(
            backend,
            template=tpl,
            tools=fns,
            interpreter=interpreter or interpreter_timeout is not None or None,
            interpreter_timeout=interpreter_timeout,
            max_turn=max_turn,
            sampling=sampling,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
        )
        history: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if message is not None:
            history.append({"role": "user", "content": message})
            _one(loop, agent, history, console, as_json)
        else:
            _interactive(loop, agent, history, console)
    finally:
        if agent is not None:
            agent.close()
        with contextlib.suppress(Exception):
            loop.run_until_complete(backend.aclose())
        loop.close()


def _one(
    loop: asyncio.AbstractEventLoop, agent: Any, history: list[Any], console: Any, as_json: bool
) -> None:
    if as_json:
        result = loop.run_until_complete(agent.achat(history))
        typer.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return
    _turn(loop, agent, history, console)


def _interactive(
    loop: asyncio.AbstractEventLoop, agent: Any, history: list[Any], console: Any
) -> None:
    console.print(
        f"chatfmt chat · {_model_label(agent.backend)} · template {agent.template.name} · "
        "Ctrl-C stops an answer, Ctrl-D ends",
        style="dim",
    )
    while True:
        try:
            text = console.input("[bold]> [/bold]")
        except EOFError:
            console.print()
            return
        except KeyboardInterrupt:
            console.print("\n(Ctrl-D or /exit ends the session)", style="dim")
            continue
        if text.strip() in ("/exit", "/quit"):
            return
        if not text.strip():
            continue
        history.append({"role": "user", "content": text})
        new = _turn(loop, agent, history, console)
        history[:] = new


def _turn(
    loop: asyncio.AbstractEventLoop, agent: Any, history: list[Any], console: Any
) -> list[Any]:
    """One answer, streamed; Ctrl-C cancels it and keeps what was written so far."""
    from ..agent.events import Final, TextDelta

    printer = _Printer(console)
    partial: list[str] = []
    outcome: list[Any] = []

    async def run() -> None:
        async for event in agent.astream_chat(history):
            if isinstance(event, Final):
                outcome.append(event.result)
            else:
                if isinstance(event, TextDelta):
                    partial.append(event.text)
                printer.event(event)

    task = loop.create_task(run())
    with contextlib.suppress(NotImplementedError):  # no signal handlers on some platforms
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        loop.run_until_complete(task)
    except asyncio.CancelledError:
        printer.end()
        console.print("[stopped]", style="yellow", markup=False)
        kept = "".join(partial)
        return [*history, {"role": "assistant", "content": kept}] if kept else history[:-1]
    finally:
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)
    printer.end()
    result = outcome[0]
    if result.finish_reason not in ("stop",):
        console.print(f"[finish: {result.finish_reason}]", style="yellow", markup=False)
    return list(result.messages)


def _model_label(backend: Any) -> str:
    """What the session talks to: the embedded model's file, or the server's URL."""
    path = getattr(backend, "model_path", None)
    if path is not None:
        return f"embedded {Path(path).name}"
    return str(getattr(backend, "base_url", type(backend).__name__))


def register(app: typer.Typer) -> None:
    app.command("chat")(chat_cmd)
