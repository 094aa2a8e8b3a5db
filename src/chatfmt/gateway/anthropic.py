"""``POST /v1/messages`` (and ``/v1/messages/count_tokens``): Anthropic's Messages API.

:func:`chat_request` translates a body (:mod:`.anthropic_schema`) to the one internal
:class:`~.request.ChatRequest`: ``system`` and text blocks → system and user messages,
``tool_use`` blocks → the assistant's ``tool_calls``, ``tool_result`` blocks → tool messages,
``thinking`` blocks (their signature checked, :mod:`.signature`) → ``reasoning_content``,
``tools`` → function tools, ``tool_choice`` ``auto``/``any``/``tool``/``none``, ``thinking`` →
the template's thinking switch. :mod:`.anthropic_wire` writes the reply. Errors have
Anthropic's shape (:func:`error_body`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..template import Template
from ..thinking import Effort, thinking_options
from .anthropic_schema import (
    CountTokensBody,
    DocumentBlock,
    ImageBlock,
    MessagesBody,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ThinkingDisabled,
    ToolChoiceAny,
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceTool,
    ToolResultBlock,
    ToolUseBlock,
)
from .errors import APIError
from .request import ChatRequest, Sampling, WireToolChoice
from .signature import ThinkingSigner

#: Anthropic's error ``type`` per HTTP status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}

#: How an error ``tool_result`` (``is_error: true``) reads to the model: templates have no
#: error flag, so the text says it.
ERROR_RESULT_PREFIX = "Error: "

#: Anthropic's ``output_config.effort`` as the reasoning effort of :func:`thinking_options`.
_EFFORTS: dict[str, Effort] = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
    "max": "high",
}


# ---------------------------------------------------------------------- errors
def error_body(error: APIError) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}`` for ``error`` (the message names
    the field, when the error has one)."""
    kind = _ERROR_TYPES.get(error.status)
    if kind is None:
        kind = "api_error" if error.status >= 500 else "invalid_request_error"
    message = error.message
    if error.param and error.param not in message:
        message = f"{error.param}: {message}"
    return {"type": "error", "error": {"type": kind, "message": message}}


#: chatfmt's names for fields of the translated request → the Anthropic body's.
_RENAMES = (
    (re.compile(r"tools\[(\d+)\]\.function\.parameters"), r"tools[\1].input_schema"),
    (re.compile(r"tools\[(\d+)\]\.function\.name"), r"tools[\1].name"),
    (re.compile(r"tools\[(\d+)\]\.function"), r"tools[\1]"),
    (re.compile(r"response_format\.json_schema\.schema"), "output_config.format.schema"),
    (re.compile(r"tool_choice 'required'"), "tool_choice any"),
    # a tool message's fields, where it came from a tool_result block
    (re.compile(r"(content\[\d+\])\.tool_call_id"), r"\1.tool_use_id"),
    (re.compile(r"(content\[\d+\])\.(role|content)\b"), r"\1"),
)
_MESSAGE_AT = re.compile(r"messages\[(\d+)\]")


@contextmanager
def located(origins: Sequence[str]) -> Iterator[None]:
    """Errors raised inside name the Anthropic body's fields: ``messages[i]`` of the
    translated conversation becomes the message or block it came from (``origins[i]``)."""
    try:
        yield
    except APIError as exc:

        def where(text: str) -> str:
            def origin(match: re.Match[str]) -> str:
                i = int(match.group(1))
                return origins[i] if i < len(origins) else match.group(0)

            text = _MESSAGE_AT.sub(origin, text)
            for pattern, name in _RENAMES:
                text = pattern.sub(name, text)
            return text

        param = where(exc.param) if exc.param else None
        raise APIError(
            exc.status, where(exc.message), type=exc.type, param=param, code=exc.code
        ) from None


# ---------------------------------------------------------------------- request
@dataclass(frozen=True)
class Translated:
    """A Messages body as the internal request, and where each of its messages came from."""

    chat: ChatRequest
    #: For each message of ``chat``, the Anthropic field it was made from (for errors).
    origins: tuple[str, ...]


def chat_request(body: CountTokensBody, template: Template, signer: ThinkingSigner) -> Translated:
    """The internal request of a Messages (or count_tokens) body, for a model of ``template``.

    A 400 names the block it refuses: images and documents (chatfmt's models are text-only),
    ``redacted_thinking``, a ``thinking`` block whose signature is not this server's, server
    tools, a final assistant message (prefill).
    """
    messages, origins = _messages(body, signer)
    tools = [_tool(tool, i) for i, tool in enumerate(body.tools or ())]
    choice, parallel = _tool_choice(body)
    options: dict[str, Any] = {}
    thinks = not isinstance(body.thinking, ThinkingDisabled)
    if body.thinking is not None:
        options.update(thinking_options(template, enabled=thinks))
    output = body.output_config
    if output is not None and output.effort is not None and thinks:
        options.update(thinking_options(template, effort=_EFFORTS[output.effort]))
    response_format = None
    if output is not None and output.format is not None:
        schema = {"name": "output", "schema": output.format.schema_, "strict": True}
        response_format = {"type": "json_schema", "json_schema": schema}
    sampling = Sampling()
    if isinstance(body, MessagesBody):
        sampling = Sampling(
            max_tokens=body.max_tokens,
            temperature=body.temperature,
            top_p=body.top_p,
            top_k=body.top_k,
            stop=tuple(body.stop_sequences or ()),
        )
    chat = ChatRequest(
        model=body.model,
        messages=messages,
        tools=tools or None,
        tool_choice=choice,
        parallel_tool_calls=parallel,
        response_format=response_format,
        options=options,
        sampling=sampling,
    )
    return Translated(chat, tuple(origins))


def _tool(tool: Any, i: int) -> dict[str, Any]:
    if tool.type not in (None, "custom"):
        raise APIError(
            400,
            f"tools[{i}].type: the server tool {tool.type!r} is not supported (chatfmt offers "
            "client tools: name, description, input_schema)",
            param=f"tools[{i}].type",
        )
    if tool.input_schema is None:
        raise APIError(400, f"tools[{i}].input_schema: Field required", param=f"tools[{i}]")
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = tool.input_schema  # in OpenAI's order: templates dump the dict
    return {"type": "function", "function": function}


def _tool_choice(body: CountTokensBody) -> tuple[WireToolChoice, bool | None]:
    """``tool_choice`` in chat form, and ``parallel_tool_calls`` (``False`` for
    ``disable_parallel_tool_use``)."""
    choice = body.tool_choice
    if choice is None:
        return None, None
    if isinstance(choice, ToolChoiceNone):
        return "none", None
    parallel = False if choice.disable_parallel_tool_use else None
    if isinstance(choice, ToolChoiceAuto):
        return "auto", parallel
    if isinstance(choice, ToolChoiceAny):
        return "required", parallel
    assert isinstance(choice, ToolChoiceTool)
    return {"type": "function", "function": {"name": choice.name}}, parallel


def _text(blocks: Any, at: str) -> str:
    """The text of ``system`` or a ``tool_result``'s content: a string or text blocks
    (one paragraph each)."""
    if blocks is None or isinstance(blocks, str):
        return blocks or ""
    for j, block in enumerate(blocks):
        if not isinstance(block, TextBlock):
            raise _refused(block, f"{at}[{j}]")
    return "\n\n".join(block.text for block in blocks)


def _refused(block: Any, at: str) -> APIError:
    """The 400 for a block chatfmt cannot put in a prompt."""
    if isinstance(block, (ImageBlock, DocumentBlock)):
        reason = f"{block.type} blocks are not supported: chatfmt serves text-only models"
    elif isinstance(block, RedactedThinkingBlock):
        reason = (
            "redacted_thinking blocks are not supported: chatfmt never writes them and cannot "
            "read Anthropic's (leave them out of the history)"
        )
    elif isinstance(block, (ToolResultBlock,)):
        reason = "tool_result blocks belong in user messages"
    elif isinstance(block, (ToolUseBlock, ThinkingBlock)):
        reason = f"{block.type} blocks belong in assistant messages"
    else:
        reason = f"{block.type} blocks are not accepted here"
    return APIError(400, f"{at}: {reason}", param=at)


def _messages(body: CountTokensBody, signer: ThinkingSigner) -> tuple[list[Any], list[str]]:
    """The conversation in chat form, and each message's origin in the body.

    Consecutive messages of one role are one turn (as Anthropic combines them); a user
    turn's ``tool_result`` blocks become tool messages, in order with its text.
    """
    out: list[Any] = []
    origins: list[str] = []
    if body.system is not None:
        out.append({"role": "system", "content": _text(body.system, "system")})
        origins.append("system")
    turns: list[tuple[str, str, list[tuple[str, Any]]]] = []  # role, where, (at, block)
    for i, message in enumerate(body.messages):
        where = f"messages[{i}]"
        content = message.content
        blocks: list[tuple[str, Any]]
        if isinstance(content, str):
            blocks = [(f"{where}.content", TextBlock(type="text", text=content))]
        else:
            blocks = [(f"{where}.content[{j}]", block) for j, block in enumerate(content)]
        if turns and turns[-1][0] == message.role:
            turns[-1][2].extend(blocks)
        else:
            turns.append((message.role, where, blocks))
    if turns[-1][0] == "assistant":
        where = turns[-1][1]
        raise APIError(
            400,
            f"{where}: a final assistant message (prefill) is not supported: end the "
            "conversation with a user message",
            param=where,
        )
    names: dict[str, str] = {}  # tool_use id → tool name, for the tool messages
    for role, where, blocks in turns:
        if role == "assistant":
            out.append(_assistant(blocks, signer, names))
            origins.append(where)
        elif role == "system":
            for at, block in blocks:
                if not isinstance(block, TextBlock):
                    raise _refused(block, at)
            text = "\n\n".join(block.text for _, block in blocks)
            out.append({"role": "system", "content": text})
            origins.append(where)
        else:
            _user(blocks, where, names, out, origins)
    return out, origins


def _user(
    blocks: list[tuple[str, Any]],
    where: str,
    names: dict[str, str],
    out: list[Any],
    origins: list[str],
) -> None:
    """A user turn: its text blocks as user messages, its tool results as tool messages."""
    text: list[str] = []

    def flush() -> None:
        if text:
            out.append({"role": "user", "content": "\n\n".join(text)})
            origins.append(where)
            text.clear()

    for at, block in blocks:
        if isinstance(block, TextBlock):
            text.append(block.text)
        elif isinstance(block, ToolResultBlock):
            flush()
            result = _text(block.content, f"{at}.content")
            if block.is_error:
                result = (
                    ERROR_RESULT_PREFIX + result if result else ERROR_RESULT_PREFIX.rstrip(": ")
                )
            message = {"role": "tool", "tool_call_id": block.tool_use_id, "content": result}
            if block.tool_use_id in names:
                message["name"] = names[block.tool_use_id]
            out.append(message)
            origins.append(at)
        else:
            raise _refused(block, at)
    flush()


def _assistant(
    blocks: list[tuple[str, Any]], signer: ThinkingSigner, names: dict[str, str]
) -> dict[str, Any]:
    """An assistant turn: text (joined as written), reasoning and tool calls."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for at, block in blocks:
        if isinstance(block, TextBlock):
            text.append(block.text)
        elif isinstance(block, ThinkingBlock):
            if not signer.valid(block.thinking, block.signature):
                raise APIError(
                    400,
                    f"{at}.signature: not this server's signature of the thinking text (thinking "
                    "blocks must come back unchanged from a chatfmt server with the same "
                    "--thinking-secret)",
                    param=f"{at}.signature",
                )
            reasoning.append(block.thinking)
        elif isinstance(block, ToolUseBlock):
            names[block.id] = block.name
            arguments = json.dumps(block.input, ensure_ascii=False)
            function = {"name": block.name, "arguments": arguments}
            calls.append({"id": block.id, "type": "function", "function": function})
        else:
            raise _refused(block, at)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) if text else None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return message
