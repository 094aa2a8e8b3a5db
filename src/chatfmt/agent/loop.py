"""The agent loop: render → complete → parse → run tools → repeat, for any template with tools.

The loop knows no family: the template renders the conversation (with its tool
definitions and protocol prompts), the backend completes it with the template's
stop words, the template's parser turns the output into a message with tool calls,
and the tools' results go back as ``tool`` messages.

Calls are constrained and checked as in the gateway: the backend gets the tools'
constraint (:func:`chatfmt.constraints.compile_constraint`; ``tool_choice`` for the first
model call of each :meth:`Agent.chat`, ``"auto"`` after it), and a
call that :func:`chatfmt.constraints.check_reply` finds wrong (a tool that is not offered,
arguments not valid against its schema) is not run: the model is told what is wrong with
it, as an error observation.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..api import get_template
from ..backends.base import Backend, CompletionRequest
from ..backends.sync import iterate_on, loop_thread
from ..constraints import Constraint, check_reply, compile_constraint
from ..errors import ChatFmtError, ValidationError
from ..parsing import Delta, ParsedToolCall, end_of_turn_markers, merge_deltas
from ..parsing.base import TOOL_PARSERS, parse
from ..parsing.deltas import CODE_INTERPRETER
from ..parsing.openai_wire import call_dict
from ..protocol import Conversation, validate_conversation
from ..template import Template
from ..tool_format import tool_format_hint
from ..turn import ParsedTurn, render_prompt
from .events import (
    AgentEvent,
    AgentFinish,
    AgentReturn,
    AgentStep,
    Final,
    ToolResult,
    ToolStart,
)
from .interpreter import CodeInterpreter
from .tools import FunctionTool, ToolExecutor

#: The function tool that stands for the interpreter in families without a code-call syntax.
PYTHON_TOOL = {
    "type": "function",
    "function": {
        "name": "python",
        "description": (
            "Run Python code in a stateful Jupyter notebook and get what it prints, returns "
            "and draws. Use it for calculations, data analysis and files."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Python code to run."}},
            "required": ["code"],
        },
    },
}


def has_code_syntax(template: Template) -> bool:
    """Whether the template's own format has code-interpreter calls (InternLM2, ChatGLM3, GLM-4, Llama 3.1)."""
    parser = TOOL_PARSERS.get(template.tool_parser or "plain")
    return bool(getattr(parser, "code_calls", False))


class Agent:
    """A tool-using agent over any completion backend and any chatfmt template with tools.

    ``tools`` are Python functions (or :class:`FunctionTool` s); ``interpreter`` a
    :class:`CodeInterpreter` (or ``True`` for one in a temporary folder). Families
    with a code-call syntax (``<|action_start|><|interpreter|>``, ChatGLM3's
    ``interpreter``, Llama's ``<|python_tag|>``) use it; the others get a ``python``
    function tool; ``interpreter_timeout`` bounds each execution of the interpreter the
    agent makes (seconds; ``interpreter=True``). ``max_turn`` bounds model calls per :meth:`chat`. ``options`` are
    template options (e.g. ``plugin_prompt``, ``enable_thinking``); ``sampling``
    overrides the template's generation defaults (``temperature``, ``max_tokens``, …).
    ``tool_choice`` (``"auto"``, ``"required"``, ``"none"``, a function's name or OpenAI's
    ``{"type": "function", "function": {"name": …}}``) applies to the first model call of
    each :meth:`chat`; later calls (after the tools' results) are ``"auto"``.
    ``parallel_tool_calls=False`` constrains each reply to one call at most.
    ``strict_history=True`` renders the history only as the official template does: a reply
    it cannot write whole (text beside tool calls) is an error instead of being written as
    the model wrote it (see docs/rendering.md).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        template: str | Template,
        tools: Iterable[FunctionTool | Callable[..., Any]] = (),
        interpreter: CodeInterpreter | bool | None = None,
        max_turn: int = 5,
        tool_timeout: float = 30.0,
        interpreter_timeout: float | None = None,
        options: Mapping[str, Any] | None = None,
        sampling: Mapping[str, Any] | None = None,
        tool_choice: str | Mapping[str, Any] = "auto",
        parallel_tool_calls: bool = True,
        strict_history: bool = False,
    ) -> None:
        self.backend = backend
        self.strict_history = strict_history
        self.template = get_template(template)
        self.executor = ToolExecutor(tools, timeout=tool_timeout)
        if interpreter is True:
            self.interpreter: CodeInterpreter | None = (
                CodeInterpreter()
                if interpreter_timeout is None
                else CodeInterpreter(timeout=interpreter_timeout)
            )
        elif interpreter_timeout is not None:
            raise ValidationError(
                "interpreter_timeout is for the interpreter the agent makes (interpreter=True); "
                "give your CodeInterpreter its own timeout",
                field="interpreter_timeout",
            )
        else:
            self.interpreter = interpreter or None
        self._own_interpreter = interpreter is True
        if not isinstance(max_turn, int) or isinstance(max_turn, bool) or max_turn < 1:
            raise ValidationError(f"max_turn must be a positive integer, got {max_turn!r}")
        self.max_turn = max_turn
        self.options = dict(options or {})
        self.sampling = dict(sampling or {})
        CompletionRequest.for_template(self.template, "", **self.sampling)  # check names early
        self.native_code = self.interpreter is not None and has_code_syntax(self.template)
        self.tool_definitions = self.executor.definitions()
        if self.interpreter is not None:
            if not self.native_code and "python" in self.executor.tools:
                raise ValidationError("a tool is named 'python', the interpreter's tool name")
            self.tool_definitions.append(
                {"type": "code_interpreter"} if self.native_code else PYTHON_TOOL
            )
        if self.tool_definitions and not self.template.supports_tools:
            raise ValidationError(
                f"template {self.template.name!r} has no tool-call format; {tool_format_hint()}"
            )
        for definition in self._functions():
            problem = unwritable_tool_name(self.template, definition, self.options)
            if problem is not None:
                raise ValidationError(problem, field="tools")
        self.parallel_tool_calls = parallel_tool_calls
        self.tool_choice = self._tool_choice(tool_choice)
        self.constraint = self._constraint("auto")
        self.first_constraint = self._constraint(self.tool_choice)

    def _tool_choice(self, choice: str | Mapping[str, Any]) -> str | dict[str, Any]:
        """``choice`` in OpenAI's form (a bare function name becomes the named form)."""
        if choice in ("auto", "none", "required"):
            if choice != "auto" and not self._functions():
                raise ValidationError(
                    f"tool_choice {choice!r} needs function tools", field="tool_choice"
                )
            return str(choice)
        if isinstance(choice, Mapping):
            name = (choice.get("function") or {}).get("name")
        else:
            name = choice
        known = [t["function"]["name"] for t in self._functions()]
        if not isinstance(name, str) or name not in known:
            raise ValidationError(
                f"tool_choice must be auto, none, required or one of the tools "
                f"({', '.join(known) or 'none offered'}), got {choice!r}",
                field="tool_choice",
            )
        return {"type": "function", "function": {"name": name}}

    def _constraint(self, choice: str | Mapping[str, Any]) -> Constraint | None:
        """The tools' constraint for ``choice`` (``None`` without tools, or where the format
        has none)."""
        if not self.tool_definitions or self.native_code:  # code calls stay unconstrained
            return None
        try:
            return compile_constraint(
                self.template,
                tools=self._functions(),
                tool_choice=choice,
                parallel_tool_calls=self.parallel_tool_calls,
                options=self.options,
            )
        except ChatFmtError:  # calls are still checked, after the fact
            if choice == "auto":
                return None
            raise

    # ------------------------------------------------------------------ public API
    async def astream_chat(
        self, messages: str | Sequence[Any], **sampling: Any
    ) -> AsyncIterator[AgentEvent]:
        """Run the loop, yielding events as tokens arrive; the last event is :class:`Final`.

        ``messages`` is the conversation, or one user message as a string. ``sampling``
        (``temperature``, ``max_tokens``, …) overrides the agent's ``sampling`` for this call.
        """
        settings = self._sampling(sampling)
        history = _as_dicts(messages, self.tool_definitions)
        steps: list[AgentStep] = []
        finish: AgentFinish = "max_turn"
        invalid_before: set[str] = set()
        for turn_index in range(self.max_turn):
            prompt, ids = self._prompt(history)
            constraint = self.first_constraint if turn_index == 0 else self.constraint
            prefill = constraint.prefill if constraint is not None else ""
            tokenizer = getattr(self.backend, "tokenizer", None)
            if prefill and ids is not None and tokenizer is not None:  # markup: special ids
                ids += tuple(tokenizer.encode(prefill))
            request = CompletionRequest.for_template(
                self.template,
                prompt + prefill,
                prompt_token_ids=ids,
                constraint=constraint,
                **settings,
            )
            turn = ParsedTurn.for_template(
                self.backend,
                request,
                self.template,
                tools=self.tool_definitions,
                options=self.options,
                prefill=prefill,
            )
            parser = turn.parser
            deltas: list[Delta] = []
            async for batch in turn.deltas():
                for delta in batch:
                    deltas.append(delta)
                    yield delta  # the parser's deltas are the stream's events
            parsed = merge_deltas(deltas)
            message = parsed.to_openai()
            step = AgentStep(
                prompt,
                message,
                str(parser.finish_reason),
                trailing_text=parser.trailing_text or "",
            )
            steps.append(step)
            calls = list(parsed.tool_calls)
            if not calls:
                history.append(message)
                finish = "length" if parser.finish_reason == "length" else "stop"
                break
            # A well-formed call of an unknown tool is run like any other call: the executor
            # answers it with the list of tools. Only calls that did not parse are malformed.
            calls = [_unflag_unknown(c) for c in calls]
            invalid = [c for c in calls if c.error is not None]
            if not invalid:
                message = {**message, "tool_calls": [call_dict(c) for c in calls]}
                history.append(message)
                rejected = self._rejected(message, calls)
                async for event in self._run_calls(calls, step, history, rejected):
                    yield event
                continue
            # A malformed call: the turn stays in the conversation as the model wrote it (its
            # text, markup included), nothing of it is run, and the model is told once.
            history.append({"role": "assistant", "content": self._as_written(turn.text)})
            keys = {_call_key(c) for c in invalid}
            if keys & invalid_before:  # told once already and written again: stop cleanly
                finish = "invalid_call"
                break
            invalid_before |= keys
            feedback = [_invalid_feedback(c) for c in invalid]
            for call, text in zip(invalid, feedback):
                result = ToolResult(call.id, _name_and_arguments(call)[0], text, error=True)
                step.observations.append(result)
                yield result
            if len(invalid) < len(calls):
                feedback.append("None of the calls of that reply was run; write them again.")
            history.append({"role": "user", "content": "\n".join(feedback)})
        answer = steps[-1].message.get("content") if steps and finish != "max_turn" else None
        reasoning = steps[-1].message.get("reasoning_content") if steps else None
        yield Final(AgentReturn(history, steps, answer, finish, reasoning))

    async def achat(self, messages: str | Sequence[Any], **sampling: Any) -> AgentReturn:
        """Run the loop to the end and return every step (arguments as :meth:`astream_chat`)."""
        result: AgentReturn | None = None
        async for event in self.astream_chat(messages, **sampling):
            if isinstance(event, Final):
                result = event.result
        assert result is not None
        return result

    def chat(self, messages: str | Sequence[Any], **sampling: Any) -> AgentReturn:
        """Blocking :meth:`achat` (not from inside a running event loop: use ``await achat``)."""
        self._sampling(sampling)  # wrong names fail here, before any model call

        async def run() -> AgentReturn:
            try:
                return await self.achat(messages, **sampling)
            finally:  # its connections belong to this call's event loop, which ends here
                await self.backend.aclose()

        return asyncio.run(run())

    def stream_chat(self, messages: str | Sequence[Any], **sampling: Any) -> Iterator[AgentEvent]:
        """Blocking :meth:`astream_chat`: events as they happen, from a worker thread's loop."""
        with loop_thread() as loop:
            try:
                yield from iterate_on(loop, self.astream_chat(messages, **sampling))
            finally:  # the backend's connections belong to that loop, which ends here
                asyncio.run_coroutine_threadsafe(self.backend.aclose(), loop).result()

    def _sampling(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """The agent's sampling with one call's ``overrides`` (names checked)."""
        settings = {**self.sampling, **overrides}
        if overrides:
            CompletionRequest.for_template(self.template, "", **settings)
        return settings

    def close(self) -> None:
        """Stop the interpreter if the agent made it."""
        if self._own_interpreter and self.interpreter is not None:
            self.interpreter.close()

    def _as_written(self, output: str) -> str:
        """The model's output up to its end-of-turn marker (engines may return the marker)."""
        cut = [
            i
            for w in end_of_turn_markers(self.template, **self.options)
            if (i := output.find(w)) >= 0
        ]
        return output[: min(cut)] if cut else output

    def _prompt(self, history: list[dict[str, Any]]) -> tuple[str, tuple[int, ...] | None]:
        """The prompt for ``history``, and its injection-safe ids when the backend has a
        chatfmt tokenizer (embedded models). Reasoning a format never shows again is left
        out, here and in ``history`` (it stays on the step, ``AgentStep.message``): see
        :func:`chatfmt.turn.render_prompt`."""
        prompt = render_prompt(
            self.template,
            history,
            tools=self.tool_definitions,
            options=self.options,
            tokenizer=getattr(self.backend, "tokenizer", None),
            strict_history=self.strict_history,
        )
        if prompt.messages is not history:
            history[:] = prompt.messages
        return prompt.text, prompt.ids

    # ------------------------------------------------------------------ tools
    def _functions(self) -> list[dict[str, Any]]:
        """The function tools offered (not the native code interpreter)."""
        return [t for t in self.tool_definitions if t.get("type") == "function"]

    def _rejected(self, message: dict[str, Any], calls: list[ParsedToolCall]) -> dict[int, str]:
        """What is wrong with each call that is not run, by call index (the gateway's check)."""
        problems = check_reply(message, tools=self._functions())
        out: dict[int, list[str]] = {}
        for problem in problems:
            head, _, _ = problem.where.partition("]")
            if not head.startswith("tool_calls["):
                continue
            index = int(head.removeprefix("tool_calls["))
            if 0 <= index < len(calls) and not calls[index].code:
                out.setdefault(index, []).append(problem.what)
        return {i: f"Error: the call was not run: {'; '.join(whats)}" for i, whats in out.items()}

    async def _run_calls(
        self,
        calls: list[ParsedToolCall],
        step: AgentStep,
        history: list[dict[str, Any]],
        rejected: Mapping[int, str],
    ) -> AsyncIterator[AgentEvent]:
        jobs = []
        for i, call in enumerate(calls):
            name, arguments = _name_and_arguments(call)
            yield ToolStart(call.id, name, arguments)
            if i in rejected:
                jobs.append(_refused(call.id, name, rejected[i]))
            else:
                jobs.append(self._run_call(call, name, arguments))
        for result in await asyncio.gather(*jobs):
            step.observations.append(result)
            history.append(
                {
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "name": result.name,
                    "content": result.content,
                }
            )
            yield result

    async def _run_call(self, call: ParsedToolCall, name: str, arguments: Any) -> ToolResult:
        if call.code or (not self.native_code and name == "python"):
            if self.interpreter is None:
                return ToolResult(call.id, name, "Error: no code interpreter is available", True)
            code = arguments if isinstance(arguments, str) else (arguments or {}).get("code")
            if not isinstance(code, str):
                return ToolResult(call.id, name, "Error: the call has no code", True)
            run = await self.interpreter.arun(code)
            return ToolResult(call.id, name, run.text, not run.ok, tuple(run.images))
        outcome = await self.executor.run_one(call.id, name, arguments)
        return ToolResult(outcome.call_id, name, outcome.content, outcome.error, outcome.images)


# ---------------------------------------------------------------------- helpers
def unwritable_tool_name(
    template: Template, definition: Mapping[str, Any], options: Mapping[str, Any]
) -> str | None:
    """Why ``template``'s tool-call format cannot carry a call of the tool ``definition``
    (``None``: it can, or the format cannot be probed). An identifier always can; another
    name (a toolkit's ``Calculator.add``) is checked on the format itself: a call of it is
    rendered as the model would write it and read back with the template's parser, next to
    the same call of an identifier (the control: a format that does not read that back
    cannot be probed this way)."""
    name = str(definition["function"]["name"])
    if name.isidentifier() or template.tool_parser is None:
        return None
    control = _written_call_name(template, "chatfmt_probe_tool", definition, options)
    if control != "chatfmt_probe_tool":
        return None
    got = _written_call_name(template, name, definition, options)
    if got == name:
        return None
    return (
        f"template {template.name!r} cannot carry the tool name {name!r}: its tool-call "
        f"format reads a call of it back as {got or 'no call'}"
    )


def _written_call_name(
    template: Template, name: str, definition: Mapping[str, Any], options: Mapping[str, Any]
) -> str | None:
    """The name the template's parser reads from a call of ``name`` as the template writes it
    (``None``: no single call, or the template does not write it)."""
    function = {"description": "A tool.", **definition["function"], "name": name}
    call = {"id": "call00000", "type": "function", "function": {"name": name, "arguments": "{}"}}
    turns: list[dict[str, Any]] = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    try:
        segments = template.segments(
            turns,
            add_generation_prompt=False,
            tools=[{"type": "function", "function": function}],
            **options,
        )
        written = "".join(s.text for s in segments if s.trained and s.message == 1)
        calls = parse(written, template, **options).tool_calls
    except ChatFmtError:
        return None
    return calls[0].name if len(calls) == 1 else None


async def _refused(call_id: str, name: str, text: str) -> ToolResult:
    """The observation of a call that was not run."""
    return ToolResult(call_id, name, text, error=True)


def _as_dicts(messages: str | Sequence[Any], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The caller's messages (checked once, here) as a list the loop can extend; a string is
    one user message."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Conversation):
        return [m.to_openai() for m in messages.messages]
    conv = validate_conversation(list(messages), tools or None)
    return [
        dict(m) if isinstance(m, Mapping) else conv.messages[i].to_openai()
        for i, m in enumerate(messages)
    ]


def _name_and_arguments(call: ParsedToolCall) -> tuple[str, Any]:
    if call.code:
        return CODE_INTERPRETER, call.arguments
    try:
        arguments = json.loads(call.arguments) if call.arguments else {}
    except ValueError:
        arguments = call.arguments
    return call.name, arguments


def _call_key(call: ParsedToolCall) -> str:
    name, arguments = _name_and_arguments(call)
    return f"{name}\x00{arguments}"


def _unflag_unknown(call: ParsedToolCall) -> ParsedToolCall:
    """A call flagged only for naming an unknown tool, without the flag."""
    if (call.error or "").startswith("unknown tool"):
        return replace(call, error=None)
    return call


def _invalid_feedback(call: ParsedToolCall) -> str:
    """What the model is told about a malformed call (it was not run)."""
    name, arguments = _name_and_arguments(call)
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return (
        f"Error: your call of {name or 'a tool'!r} was not run: {call.error}. "
        f"It was written as: {shown}. Write a valid call, or answer without the tool."
    )
