"""``POST /v1/responses`` (OpenAI's Responses API, the Open Responses standard): the body →
:class:`~.request.ChatRequest`, and a :class:`~.generation.Generation`'s deltas → the
``response`` object, or its streamed events.

Input items become chat messages: ``message`` items (text parts joined), ``reasoning``
(its text, else its summary) and ``function_call`` items fold into the assistant message
they came from, ``function_call_output`` is a tool message. The reply's output items are
the reverse — ``reasoning``, ``message``, then one ``function_call`` per call — so a reply
sent back as input renders to what the model wrote. ``previous_response_id`` continues a
stored conversation (:mod:`.response_store`).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ChatFmtError
from ..parsing import ContentDelta, Delta, ReasoningDelta
from ..thinking import thinking_options
from .errors import APIError, api_error
from .generation import Generation
from .request import ChatRequest, Sampling, WireToolChoice
from .response_store import ResponseStore, StoredResponse
from .responses_schema import (
    AllowedTools,
    FunctionCallItem,
    FunctionCallOutputItem,
    FunctionChoice,
    FunctionTool,
    JSONSchemaTextFormat,
    MessageItem,
    ReasoningItem,
    ResponsesBody,
    Unsupported,
)
from .schema import JSONObjectFormat

#: Open Responses' and OpenAI's reasoning efforts → what :func:`thinking_options` knows.
_EFFORTS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high"}
_EFFORTS |= {"xhigh": "high", "max": "high"}


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


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


# ---------------------------------------------------------------------- items → messages
_PART_REFUSALS = {
    "input_image": "images are not supported: models are served as text only",
    "input_file": "files are not supported: send their text as input_text",
    "input_audio": "audio is not supported: models are served as text only",
    "input_video": "video is not supported: models are served as text only",
}


def _text(parts: str | Sequence[Any], where: str) -> str:
    """The text of a content string or parts (text, output text, refusal) joined."""
    if isinstance(parts, str):
        return parts
    texts = []
    for j, part in enumerate(parts):
        if isinstance(part, Unsupported):
            reason = _PART_REFUSALS.get(
                part.type, f"content parts of type {part.type!r} are not supported"
            )
            raise APIError(400, reason, param=f"{where}[{j}]", code="unsupported_value")
        texts.append(part.refusal if part.type == "refusal" else part.text)
    return "".join(texts)


@dataclass
class _Turn:
    """The assistant message being folded from consecutive output items."""

    source: str
    reasoning: str | None = None
    content: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning is not None:
            out["reasoning_content"] = self.reasoning
        if self.calls:
            out["tool_calls"] = self.calls
        return out


def input_messages(
    items: str | Sequence[Any] | None, names: dict[str, str] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The chat messages of ``input`` and, for each, the input item it came from
    (``input[i]``): what an error about ``messages[k]`` names instead.

    ``names`` maps the call ids of earlier function calls to their names (a tool message
    carries its function's name); the calls read here are added to it.
    """
    if items is None:
        return [], []
    if isinstance(items, str):
        return [{"role": "user", "content": items}], ["input"]
    names = {} if names is None else names
    messages: list[dict[str, Any]] = []
    sources: list[str] = []
    turn: _Turn | None = None

    def flush() -> None:
        nonlocal turn
        if turn is not None:
            messages.append(turn.message())
            sources.append(turn.source)
            turn = None

    for i, item in enumerate(items):
        where = f"input[{i}]"
        if isinstance(item, Unsupported):
            raise APIError(
                400,
                f"input items of type {item.type!r} are not supported (message, function_call, "
                "function_call_output and reasoning are; send items themselves, not references)",
                param=f"{where}.type",
                code="unsupported_value",
            )
        if isinstance(item, MessageItem) and item.role != "assistant":
            flush()
            messages.append({"role": item.role, "content": _text(item.content, f"{where}.content")})
            sources.append(where)
        elif isinstance(item, FunctionCallOutputItem):
            flush()
            message = {
                "role": "tool",
                "tool_call_id": item.call_id,
                "content": _text(item.output, f"{where}.output"),
            }
            if item.call_id in names:
                message["name"] = names[item.call_id]
            messages.append(message)
            sources.append(where)
        else:  # assistant side: reasoning, then the message, then calls (a reply's order)
            if (
                turn is not None
                and (
                    turn.calls
                    or (isinstance(item, ReasoningItem) and turn.content is not None)
                    or (isinstance(item, MessageItem) and turn.content is not None)
                )
                and not isinstance(item, FunctionCallItem)
            ):
                flush()
            if turn is None:
                turn = _Turn(where)
            if isinstance(item, ReasoningItem):
                parts = item.content if item.content else item.summary
                text = "".join(p.text for p in parts)
                turn.reasoning = text if turn.reasoning is None else turn.reasoning + text
            elif isinstance(item, MessageItem):
                turn.content = _text(item.content, f"{where}.content")
            else:
                assert isinstance(item, FunctionCallItem)
                names[item.call_id] = item.name
                turn.calls.append(
                    {
                        "id": item.call_id,
                        "type": "function",
                        "function": {"name": item.name, "arguments": item.arguments},
                    }
                )
    flush()
    return messages, sources


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


_MESSAGE_REF = re.compile(r"messages\[(\d+)\]")
_TOOL_REF = re.compile(r"tools\[(\d+)\]\.function\.")


def located(error: APIError, sources: Sequence[str]) -> APIError:
    """``error`` naming the Responses request's fields (``input[2]``, ``tools[0].name``)
    instead of the chat messages and tools they were translated to."""

    def field_of(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return sources[index] if index < len(sources) else match.group(0)

    def rewrite(text: str) -> str:
        return _TOOL_REF.sub(r"tools[\1].", _MESSAGE_REF.sub(field_of, text))

    param = rewrite(error.param) if error.param else error.param
    return APIError(
        error.status, rewrite(error.message), type=error.type, param=param, code=error.code
    )


# ---------------------------------------------------------------------- output items
class OutputItems:
    """The output items of one reply, built from the parser's deltas as they come, and the
    streamed events that build them (without ``sequence_number``).

    An item is open until a delta of another kind comes: reasoning, a message (whitespace
    alone does not open one; before a call it is dropped, as in chat), one function call per
    call. Calls from index ``max_calls`` on are dropped (``parallel_tool_calls: false``).
    """

    def __init__(self, max_calls: int | None = None) -> None:
        self.max_calls = max_calls
        self.items: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None
        self._text: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._pending = ""  # whitespace content not yet in a message

    @property
    def has_calls(self) -> bool:
        return bool(self._calls)

    def feed(self, delta: Delta) -> list[dict[str, Any]]:
        """The events of one delta."""
        if isinstance(delta, ContentDelta):
            return self._content(delta.text)
        if isinstance(delta, ReasoningDelta):
            return self._reasoning(delta.text)
        if delta.code or (self.max_calls is not None and delta.index >= self.max_calls):
            return []  # only function tools are offered; calls past the one allowed
        events: list[dict[str, Any]] = []
        if delta.id is not None and delta.index not in self._calls:
            events += self._close("completed")
            self._pending = ""
            call: dict[str, Any] = {
                "id": _new_id("fc"),
                "type": "function_call",
                "status": "in_progress",
                "call_id": delta.id,
                "name": delta.name or "",
                "arguments": "",
            }
            events.append(self._add(call))
            self._calls[delta.index] = call
        item = self._calls.get(delta.index)
        if item is None or not delta.text:
            return events
        if item is self._open:
            self._text.append(delta.text)
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": self._index,
                    "delta": delta.text,
                }
            )
        else:  # a piece of an earlier call (not written by any parser): kept, not streamed
            item["arguments"] += delta.text
        return events

    def close(self, status: str = "completed") -> list[dict[str, Any]]:
        """The events that end the reply's last item (``status``: ``incomplete`` when cut)."""
        events: list[dict[str, Any]] = []
        if self._pending and not self._calls:
            events += self._content_text(self._pending)
        self._pending = ""
        return events + self._close(status)

    # ------------------------------------------------------------------ items
    @property
    def _index(self) -> int:
        return len(self.items) - 1

    def _add(self, item: dict[str, Any]) -> dict[str, Any]:
        self.items.append(item)
        self._open = item
        self._text = []
        return {
            "type": "response.output_item.added",
            "output_index": self._index,
            "item": dict(item),
        }

    def _content(self, text: str) -> list[dict[str, Any]]:
        if not text:
            return []
        if self._open is None or self._open["type"] != "message":
            if (self._pending + text).isspace():
                self._pending += text
                return []
            text, self._pending = self._pending + text, ""
        return self._content_text(text)

    def _content_text(self, text: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if self._open is None or self._open["type"] != "message":
            events += self._close("completed")
            item = {
                "id": _new_id("msg"),
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            events.append(self._add(item))
            events.append(self._part_event("response.content_part.added", _output_text("")))
        self._text.append(text)
        assert self._open is not None
        events.append(
            {
                "type": "response.output_text.delta",
                "item_id": self._open["id"],
                "output_index": self._index,
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            }
        )
        return events

    def _reasoning(self, text: str) -> list[dict[str, Any]]:
        if not text:
            return []
        events: list[dict[str, Any]] = []
        if self._open is None or self._open["type"] != "reasoning":
            events += self._close("completed")
            item = {"id": _new_id("rs"), "type": "reasoning", "summary": [], "content": []}
            events.append(self._add(item))
            events.append(self._part_event("response.content_part.added", _reasoning_text("")))
        self._text.append(text)
        assert self._open is not None
        events.append(
            {
                "type": "response.reasoning.delta",
                "item_id": self._open["id"],
                "output_index": self._index,
                "content_index": 0,
                "delta": text,
            }
        )
        return events

    def _part_event(self, kind: str, part: dict[str, Any]) -> dict[str, Any]:
        assert self._open is not None
        return {
            "type": kind,
            "item_id": self._open["id"],
            "output_index": self._index,
            "content_index": 0,
            "part": part,
        }

    def _close(self, status: str) -> list[dict[str, Any]]:
        """The events that end the open item (none if none is open)."""
        item = self._open
        if item is None:
            return []
        self._open = None
        text = "".join(self._text)
        head = {"item_id": item["id"], "output_index": self._index}
        events: list[dict[str, Any]] = []
        if item["type"] == "message":
            part = _output_text(text)
            item["content"] = [part]
            item["status"] = status
            events.append(
                {
                    "type": "response.output_text.done",
                    **head,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                }
            )
            events.append(
                {"type": "response.content_part.done", **head, "content_index": 0, "part": part}
            )
        elif item["type"] == "reasoning":
            part = _reasoning_text(text)
            item["content"] = [part]
            events.append(
                {"type": "response.reasoning.done", **head, "content_index": 0, "text": text}
            )
            events.append(
                {"type": "response.content_part.done", **head, "content_index": 0, "part": part}
            )
        else:
            item["arguments"] += text
            item["status"] = status
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **head,
                    "name": item["name"],
                    "arguments": item["arguments"],
                }
            )
        events.append(
            {"type": "response.output_item.done", "output_index": self._index, "item": item}
        )
        return events


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _reasoning_text(text: str) -> dict[str, Any]:
    return {"type": "reasoning_text", "text": text}


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
        self.id = _new_id("resp")
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

    def usage(self) -> dict[str, Any] | None:
        """The ``usage`` object: the backend's counts, else the tokenizer's (else null)."""
        usage = self.generation.usage()
        if usage is None or usage.prompt_tokens is None or usage.completion_tokens is None:
            return None
        reasoning = "".join(
            part["text"]
            for item in self.output.items
            if item["type"] == "reasoning"
            for part in item["content"]
        )
        tokenizer = self.generation.prepared.entry.active_tokenizer
        reasoning_tokens = len(tokenizer.encode(reasoning)) if reasoning and tokenizer else 0
        return {
            "input_tokens": usage.prompt_tokens,
            "output_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        }

    def finished(self) -> dict[str, Any]:
        """The final response object (``completed`` or ``incomplete``), stored unless
        ``store: false``."""
        resource = self.resource(self.status, usage=self.usage())
        if self.store is not None:
            items = self.output.items
            reply, _ = input_messages(_as_items(items))
            self.store.put(
                self.id,
                StoredResponse(resource, tuple(self.translated.turn + reply), self.previous),
            )
        return resource


def _as_items(items: list[dict[str, Any]]) -> list[Any]:
    """Output items as the input items they are when sent back."""
    out: list[Any] = []
    for item in items:
        if item["type"] == "message":
            out.append(MessageItem(role="assistant", content=item["content"][0]["text"]))
        elif item["type"] == "reasoning":
            out.append(
                ReasoningItem.model_validate({"type": "reasoning", "content": item["content"]})
            )
        else:
            out.append(
                FunctionCallItem(
                    type="function_call",
                    call_id=item["call_id"],
                    name=item["name"],
                    arguments=item["arguments"],
                )
            )
    return out


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
    return writer.finished()


def _sse(event: dict[str, Any]) -> bytes:
    data = json.dumps(event, ensure_ascii=False)
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


async def events(writer: ResponseWriter) -> AsyncGenerator[bytes, None]:
    """The server-sent events of a started generation, each with its ``sequence_number``.

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

    try:
        yield sse({"type": "response.created", "response": writer.resource("in_progress")})
        yield sse({"type": "response.in_progress", "response": writer.resource("in_progress")})
        feed = output.feed
        async for batch in generation.batches():
            for delta in batch:
                for event in feed(delta):
                    yield sse(event)
        invalid = generation.problem()
        if invalid is not None:
            for event in _failure(writer, invalid):
                yield sse(event)
            return
        status = writer.status
        for event in output.close(status):
            yield sse(event)
        kind = "response.incomplete" if status == "incomplete" else "response.completed"
        yield sse({"type": kind, "response": writer.finished()})
        yield b"data: [DONE]\n\n"
    except ChatFmtError as exc:
        for event in _failure(writer, api_error(exc)):
            yield sse(event)
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
