"""``POST /v1/responses`` (OpenAI's Responses API, the Open Responses standard): the body →
:class:`~.request.ChatRequest`, and a :class:`~.generation.Generation`'s deltas → the
``response`` object, or its streamed events.

Input items become chat messages (:mod:`.responses_input`); the reply's output items —
``reasoning``, ``message``, then one ``function_call`` per call — and their events are
built from the parser's deltas (:mod:`.responses_items`), so a reply sent back as input
renders to what the model wrote. ``previous_response_id`` continues a stored
conversation (:mod:`.response_store`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, replace
from typing import Any

from .. import fastjson
from ..errors import ChatFmtError
from ..parsing import ContentDelta
from ..thinking import thinking_options
from .chat import prompt_tokens
from .errors import APIError, api_error
from .events import Last
from .generation import Generation
from .request import ChatRequest, Sampling, WireToolChoice
from .response_store import ResponseStore, StoredResponse
from .responses_input import input_messages, located, reply_messages
from .responses_items import OutputItems, new_id
from .responses_schema import (
    AllowedTools,
    FunctionChoice,
    FunctionTool,
    JSONSchemaTextFormat,
    ResponsesBody,
    Unsupported,
)
from .schema import JSONObjectFormat

__all__ = ["ResponseWriter", "chat_request", "create", "events", "located", "refused"]

#: Open Responses' and OpenAI's reasoning efforts → what :func:`thinking_options` knows.
_EFFORTS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high"}
_EFFORTS |= {"xhigh": "high", "max": "high"}


# ---------------------------------------------------------------------- what is refused
def refused(body: ResponsesBody) -> APIError | None:
    """A 400 for a field the gateway cannot honour (never silently ignored)."""

    def no(param: str, message: str) -> APIError:
        return APIError(400, message, param=param, code="unsupported_value")

    if body.background:
        return no("background", "background mode is not supported: send the request and wait")
    if body.conversation is not None:
        return no(
            "conversation",
            "conversation objects are not supported: continue with previous_response_id, or "
            "send the whole conversation as input",
        )
    if body.prompt is not None:
        return no("prompt", "stored prompt templates are not supported: send input")
    if body.top_logprobs or "message.output_text.logprobs" in (body.include or ()):
        return no("top_logprobs", "logprobs are not supported")
    if body.max_tool_calls is not None:
        return no(
            "max_tool_calls",
            "max_tool_calls is not supported (parallel_tool_calls: false allows one call)",
        )
    if body.input is None and body.previous_response_id is None:
        return APIError(400, "input is required", param="input", code="missing_required_parameter")
    for i, tool in enumerate(body.tools or ()):
        if isinstance(tool, Unsupported):
            return no(
                f"tools[{i}]",
                f"tool type {tool.type!r} is not supported: hosted tools (web search, file "
                "search, computer use, MCP, …) are not run by chatfmt; offer function tools "
                '({"type": "function", "name", "parameters"}) and run them yourself',
            )
    if isinstance(body.tool_choice, Unsupported):
        return no(
            "tool_choice",
            f"tool_choice of type {body.tool_choice.type!r} is not supported (auto, none, "
            "required, a function or allowed_tools)",
        )
    return None


# ---------------------------------------------------------------------- body → request
def _tools(body: ResponsesBody) -> tuple[list[dict[str, Any]] | None, WireToolChoice]:
    """The function tools in chat form and ``tool_choice`` in chat form (``allowed_tools``
    narrows the tools offered to the ones it names)."""
    tools = [t for t in body.tools or () if isinstance(t, FunctionTool)]
    choice = body.tool_choice
    wire: WireToolChoice
    if isinstance(choice, FunctionChoice):
        wire = {"type": "function", "function": {"name": choice.name}}
    elif isinstance(choice, AllowedTools):
        allowed = set()
        for j, entry in enumerate(choice.tools):
            if entry.get("type") != "function" or not isinstance(entry.get("name"), str):
                raise APIError(
                    400,
                    "allowed_tools lists function tools only ({'type': 'function', 'name': N})",
                    param=f"tool_choice.tools[{j}]",
                    code="unsupported_value",
                )
            allowed.add(entry["name"])
        tools = [t for t in tools if t.name in allowed]
        wire = choice.mode
    else:  # a string (other objects are refused before)
        wire = choice if isinstance(choice, str) else None
    chat_tools = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool.name}
        if tool.description is not None:
            function["description"] = tool.description
        if tool.parameters is not None:
            function["parameters"] = tool.parameters
        if tool.strict is not None:
            function["strict"] = tool.strict
        chat_tools.append({"type": "function", "function": function})
    return chat_tools or None, wire


def _response_format(body: ResponsesBody) -> dict[str, Any] | None:
    fmt = body.text.format if body.text is not None else None
    if isinstance(fmt, JSONObjectFormat):
        return {"type": "json_object"}
    if isinstance(fmt, JSONSchemaTextFormat):
        schema = fmt.model_dump(by_alias=True, exclude_none=True, exclude={"type"})
        return {"type": "json_schema", "json_schema": schema}
    return None


def _options(body: ResponsesBody, template: Any) -> dict[str, Any]:
    effort = body.reasoning.effort if body.reasoning is not None else None
    if effort is None:
        return {}
    if effort == "none":
        return thinking_options(template, enabled=False)
    return thinking_options(template, effort=_EFFORTS[effort])  # type: ignore[arg-type]


@dataclass(frozen=True)
class Translated:
    """A Responses body as the internal request, and where its messages came from."""

    chat: ChatRequest
    #: This turn's messages (the input's, after any stored ones), for the store.
    turn: list[dict[str, Any]]
    #: Per message of ``chat``: the request field it came from (``input[2]``, …).
    sources: list[str]

    def one_system_message(self) -> Translated | None:
        """The same request with its leading system messages (``instructions``, then
        ``system``/``developer`` items) joined into one, for a template that takes one
        system message only (``None``: there are not several)."""
        messages = list(self.chat.messages)
        count = 0
        while count < len(messages) and messages[count].get("role") in ("system", "developer"):
            count += 1
        texts = [messages[i].get("content") for i in range(count)]
        if count < 2 or not all(isinstance(t, str) for t in texts):
            return None
        joined = {"role": "system", "content": "\n\n".join(texts)}
        chat = replace(self.chat, messages=[joined, *messages[count:]])
        return replace(self, chat=chat, sources=self.sources[:1] + self.sources[count:])


def chat_request(
    body: ResponsesBody, template: Any, previous: StoredResponse | None = None
) -> Translated:
    """The internal request of a Responses body (``previous``: the stored response that
    ``previous_response_id`` names; its conversation comes before the input)."""
    head: list[dict[str, Any]] = []
    sources: list[str] = []
    if body.instructions is not None:
        head.append({"role": "system", "content": body.instructions})
        sources.append("instructions")
    names: dict[str, str] = {}
    if previous is not None:
        earlier = previous.conversation()
        for message in earlier:
            for call in message.get("tool_calls") or ():
                names[call["id"]] = call["function"]["name"]
        head += earlier
        sources += ["previous_response_id"] * len(earlier)
    turn, turn_sources = input_messages(body.input, names)
    tools, tool_choice = _tools(body)
    stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or ())
    sampling = Sampling(
        max_tokens=body.max_output_tokens,
        temperature=body.temperature,
        top_p=body.top_p,
        seed=body.seed,
        stop=tuple(stop),
    )
    chat = ChatRequest(
        model=body.model,
        messages=head + turn,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=body.parallel_tool_calls,
        response_format=_response_format(body),
        options=_options(body, template),
        sampling=sampling,
    )
    return Translated(chat, turn, sources + turn_sources)


# ---------------------------------------------------------------------- the response object
class ResponseWriter:
    """The ``response`` object of one request (its echo of the request's settings), and
    what is stored of it."""

    def __init__(
        self,
        body: ResponsesBody,
        translated: Translated,
        generation: Generation,
        store: ResponseStore | None,
        previous: StoredResponse | None,
    ) -> None:
        self.id = new_id("resp")
        self.body = body
        self.translated = translated
        self.generation = generation
        self.store = store if body.store is not False else None
        self.previous = previous
        self.created_at = int(time.time())
        self.output = OutputItems(generation.max_calls)

    def resource(
        self,
        status: str,
        *,
        usage: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The response object with ``status`` and the output items so far."""
        body, request = self.body, self.generation.request
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        done = status in ("completed", "incomplete", "failed")
        fmt = body.text.format if body.text is not None and body.text.format is not None else None
        text: dict[str, Any] = {
            "format": fmt.model_dump(by_alias=True, exclude_none=True) if fmt else {"type": "text"}
        }
        if body.text is not None and body.text.verbosity is not None:
            text["verbosity"] = body.text.verbosity
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "completed_at": int(time.time()) if done else None,
            "status": status,
            "error": error,
            "incomplete_details": incomplete,
            "model": body.model,
            "previous_response_id": body.previous_response_id,
            "instructions": body.instructions,
            "output": [dict(item) for item in self.output.items] if done else [],
            "tools": [_tool_echo(t) for t in body.tools or () if isinstance(t, FunctionTool)],
            "tool_choice": _choice_echo(body),
            "parallel_tool_calls": body.parallel_tool_calls is not False,
            "text": text,
            "temperature": request.temperature if request.temperature is not None else 1.0,
            "top_p": request.top_p if request.top_p is not None else 1.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "top_logprobs": 0,
            "reasoning": {
                "effort": body.reasoning.effort if body.reasoning else None,
                "summary": body.reasoning.summary if body.reasoning else None,
            },
            "max_output_tokens": body.max_output_tokens,
            "max_tool_calls": None,
            "truncation": body.truncation or "disabled",
            "usage": usage,
            "metadata": body.metadata or {},
            "store": body.store is not False,
            "background": False,
            "service_tier": "default",
            "user": body.user,
            "safety_identifier": body.safety_identifier,
            "prompt_cache_key": body.prompt_cache_key,
        }

    @property
    def status(self) -> str:
        return "incomplete" if self.generation.finish_reason == "length" else "completed"

    async def usage(self) -> dict[str, Any] | None:
        """The ``usage`` object: the backend's counts, else counted by the tokenizer chatfmt
        knows or the engine's tokenize endpoint (``null`` when neither can count)."""
        generation = self.generation
        usage = await generation.counted_usage()
        prompt = usage.prompt_tokens if usage is not None else None
        completion = usage.completion_tokens if usage is not None else None
        if prompt is None:
            try:
                prompt = await prompt_tokens(generation.prepared)
            except APIError:
                return None
        if completion is None:
            completion = await self._count(generation.text[len(generation.prepared.prefill) :])
        reasoning = "".join(
            part["text"]
            for item in self.output.items
            if item["type"] == "reasoning"
            for part in item["content"]
        )
        reasoning_tokens = await self._count(reasoning)
        if completion is None:
            return None
        return {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens or 0},
        }

    async def _count(self, text: str) -> int | None:
        """The token count of ``text`` (``None``: no tokenizer and no tokenize endpoint)."""
        if not text:
            return 0
        entry = self.generation.prepared.entry
        if entry.active_tokenizer is not None:
            return len(entry.active_tokenizer.encode(text))
        try:
            return len(await entry.backend.tokenize(text))
        except ChatFmtError:
            return None

    async def finished(self) -> dict[str, Any]:
        """The final response object (``completed`` or ``incomplete``), stored unless
        ``store: false``."""
        resource = self.resource(self.status, usage=await self.usage())
        if self.store is not None:
            reply = reply_messages(self.output.items)
            self.store.put(
                self.id,
                StoredResponse(resource, tuple(self.translated.turn + reply), self.previous),
            )
        return resource


def _tool_echo(tool: FunctionTool) -> dict[str, Any]:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": tool.strict,
    }


def _choice_echo(body: ResponsesBody) -> Any:
    choice = body.tool_choice
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        return choice
    return choice.model_dump(exclude_none=True)


# ---------------------------------------------------------------------- non-streaming, streaming
async def create(writer: ResponseWriter) -> dict[str, Any]:
    """The whole ``response`` object (an :class:`APIError` if the reply is invalid)."""
    output = writer.output
    for delta in await writer.generation.run():
        output.feed(delta)
    output.close("incomplete" if writer.status == "incomplete" else "completed")
    return await writer.finished()


#: The end of a ``response.output_text.delta`` event after its text (as :func:`_sse` writes
#: the event :meth:`~.responses_items.OutputItems.feed` makes), up to its sequence number.
_TEXT_DELTA_END = b',"logprobs":[],"sequence_number":%d}\n\n'


def _text_delta_head(item_id: str, output_index: int) -> bytes:
    """A ``response.output_text.delta`` event of message ``item_id``, up to its text."""
    head = {
        "type": "response.output_text.delta",
        "item_id": item_id,
        "output_index": output_index,
        "content_index": 0,
    }
    return b"event: response.output_text.delta\ndata: " + fastjson.dumps(head)[:-1] + b',"delta":'


def _sse(event: dict[str, Any]) -> bytes:
    """One server-sent event: ``event: <type>`` and the event as JSON."""
    return b"event: " + event["type"].encode() + b"\ndata: " + fastjson.dumps(event) + b"\n\n"


async def events(writer: ResponseWriter) -> AsyncGenerator[bytes, None]:
    """The server-sent events of a started generation, each with its ``sequence_number``:
    one write per backend chunk (the first with ``response.created`` and
    ``response.in_progress``; the last, :class:`~.events.Last`, with the closing events).

    A failure after the first event (the backend dies, the reply breaks the request's
    structure) is an ``error`` event then ``response.failed``, and the stream ends.
    """
    generation, output = writer.generation, writer.output
    sequence = 0

    def sse(event: dict[str, Any]) -> bytes:
        nonlocal sequence
        event["sequence_number"] = sequence
        sequence += 1
        return _sse(event)

    out: list[bytes] = []
    try:
        resource = writer.resource("in_progress")
        out.append(sse({"type": "response.created", "response": resource}))
        out.append(sse({"type": "response.in_progress", "response": resource}))
        feed, more_text, dumps = output.feed, output.more_text, fastjson.dumps
        head, head_of = b"", ("", -1)  # the open message's text delta event, up to its text
        async for batch in generation.batches():  # the hot loop: one pass per backend chunk
            for delta in batch:
                if type(delta) is ContentDelta and (into := more_text(delta.text)) is not None:
                    if into != head_of:
                        head, head_of = _text_delta_head(*into), into
                    out.append(head + dumps(delta.text) + _TEXT_DELTA_END % sequence)
                    sequence += 1
                    continue
                for event in feed(delta):
                    out.append(sse(event))
            if out:
                yield b"".join(out)
                out = []
        invalid = generation.problem()
        if invalid is not None:
            out += [sse(event) for event in _failure(writer, invalid)]
            yield Last(b"".join(out))
            return
        status = writer.status
        out += [sse(event) for event in output.close(status)]
        kind = "response.incomplete" if status == "incomplete" else "response.completed"
        out.append(sse({"type": kind, "response": await writer.finished()}))
        out.append(b"data: [DONE]\n\n")
        yield Last(b"".join(out))
    except ChatFmtError as exc:
        out += [sse(event) for event in _failure(writer, api_error(exc))]
        yield Last(b"".join(out))
    finally:
        await generation.aclose()


def _failure(writer: ResponseWriter, error: APIError) -> list[dict[str, Any]]:
    """An ``error`` event (OpenAI's flat fields and Open Responses' ``error`` object) and
    ``response.failed``."""
    payload = {
        "type": error.type,
        "code": error.code,
        "message": error.message,
        "param": error.param,
    }
    failed = writer.resource(
        "failed", error={"code": error.code or error.type, "message": error.message}
    )
    return [
        {
            "type": "error",
            "code": error.code,
            "message": error.message,
            "param": error.param,
            "error": payload,
        },
        {"type": "response.failed", "response": failed},
    ]
