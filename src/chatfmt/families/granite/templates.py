"""IBM Granite chat formats: Granite 3.x (``<|tool_call|>``) and Granite 4.x (``<tool_call>`` JSON).

Turns are ``<|start_of_role|>{role}<|end_of_role|>{content}<|end_of_text|>\\n``.
Options: ``documents`` (list of ``{"doc_id", "text"}`` for Granite 3, any JSON objects
for Granite 4), and for Granite 3 ``controls`` (e.g. ``{"citations": True}``) and ``thinking``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

from ...config import GenerationConfig
from ...errors import ValidationError
from ...protocol import Conversation, Message
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template, text_beside_calls
from .markers import END_OF_ROLE, END_OF_TEXT, START_OF_ROLE, TOOL_CALL_TOKEN
from .parser import GraniteParser, GraniteThinkParser

_SOR = START_OF_ROLE
_EOR = END_OF_ROLE
_EOT = END_OF_TEXT


def _tojson(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _raw_tools(conv: Conversation) -> list[dict[str, Any]]:
    return [dict(t.raw) for t in conv.tools]


def _controls(ctx: RenderContext) -> Mapping[str, Any] | Sequence[Any]:
    """The ``controls`` option: an object (``{"citations": true}``) or a list of names."""
    controls = ctx.option("controls")
    if controls is None:
        return {}
    if isinstance(controls, (str, bytes)) or not isinstance(controls, (Mapping, Sequence)):
        raise ValidationError(
            'controls must be an object such as {"citations": true} or a list of names',
            field="controls",
        )
    return controls


def _documents(ctx: RenderContext) -> Sequence[Any]:
    docs = ctx.option("documents")
    if docs is None:
        return ()
    if isinstance(docs, (str, bytes, Mapping)) or not isinstance(docs, Sequence):
        raise ValidationError("documents must be a list of objects", field="documents")
    return docs


_G3_TOOLS = (
    " You are a helpful assistant with access to the following tools. When a tool is required to answer "
    "the user's query, respond only with <|tool_call|> followed by a JSON list of tools used. If a tool "
    "does not exist in the provided list of tools, notify the user that you do not have the ability to "
    "fulfill the request."
)
_G3_DOCS = (
    " Write the response to the user's input by strictly aligning with the facts in the provided "
    "documents. If the information needed to answer the question is not available in the documents, "
    "inform the user that the question cannot be answered based on the available data."
)
_G3_THINKING = (
    " You are a helpful AI assistant.\nRespond to every user query in a comprehensive and detailed way. "
    "You can write down your thoughts and reasoning process before responding. In the thought process, "
    "engage in a comprehensive cycle of analysis, summarization, exploration, reassessment, reflection, "
    "backtracing, and iteration to develop well-considered thinking process. In the response section, "
    "based on various attempts, explorations, and reflections from the thoughts section, systematically "
    "present the final solution that you deem correct. The response should summarize the thought process. "
    "Write your thoughts between <think></think> and write your response between <response></response> "
    "for each user query."
)
_G3_CITATIONS = (
    "\nUse the symbols <|start_of_cite|> and <|end_of_cite|> to indicate when a fact comes from a document "
    "in the search result, e.g <|start_of_cite|> {document_id: 1}my fact <|end_of_cite|> for a fact from "
    "document 1. Afterwards, list all the citations with their corresponding documents in an ordered list."
)
_G3_HALLUCINATIONS = (
    "\nFinally, after the response is written, include a numbered list of sentences from the response "
    "with a corresponding risk value that are hallucinated and not based in the documents."
)


class _SystemTexts(NamedTuple):
    """The pieces of a Granite default system prompt."""

    sep: str  # between its first sentences
    tools: str
    docs: str
    tools_and_docs: str
    thinking: str
    citations: str
    hallucinations: str


class Granite3(Template):
    """Granite 3.x instruct (3.3 template): dated default system prompt, tools as an ``available_tools`` turn.

    The official template does not render ``tool_calls``: it fails on content null and
    drops the calls silently otherwise. chatfmt writes an assistant message with tool
    calls and content null or ``""`` as ``<|tool_call|>[{"name": …, "arguments": …}]``
    (what the model generates); text beside tool calls is written before the
    ``<|tool_call|>`` (with ``strict_history=True`` it raises
    :class:`~chatfmt.errors.UnsupportedFeatureError`, ``field="tool_calls"``).
    """

    name = "granite3"
    aliases: tuple[str, ...] = ("granite-3", "granite3.3", "granite-3.3", "granite3.1")
    model_ids: tuple[str, ...] = (
        "ibm-granite/granite-3.3-2b-instruct",
        "ibm-granite/granite-3.3-8b-instruct",
        "ibm-granite/granite-3.1-2b-instruct",
        "ibm-granite/granite-3.1-8b-instruct",
    )
    model_patterns: tuple[str, ...] = (r"granite-?3(\.\d)?-\d+b-instruct", r"granite-?3")
    description = "Granite 3.x: <|start_of_role|>role<|end_of_role|>…<|end_of_text|>; <|tool_call|> JSON list."
    source = "official Jinja: ibm-granite-granite-3.3-2B-Instruct.jinja"
    official_templates: tuple[str, ...] = ("ibm-granite-granite-3.3-2B-Instruct.jinja",)
    supports_tools = True
    tool_parser_class = GraniteParser
    #: ``thinking=True`` output: ``<think>…</think><response>…</response>``.
    reasoning_parser_class = GraniteThinkParser
    default_options: ClassVar[Mapping[str, Any]] = {
        "documents": None,
        "controls": None,
        "thinking": False,
    }
    control_tokens = (_SOR, _EOR, _EOT, TOOL_CALL_TOKEN)
    generation_config = GenerationConfig(
        session_len=131072,
        stop_words=(_EOT,),
        top_p=1.0,
        temperature=0.0,
    )
    #: The role of the turn that lists the tools.
    tools_role: ClassVar[str] = "available_tools"

    #: The default system prompt's pieces (Granite 3.2 words and joins them differently).
    system_texts: ClassVar[_SystemTexts] = _SystemTexts(
        " ",
        _G3_TOOLS,
        _G3_DOCS,
        _G3_TOOLS + _G3_DOCS,
        _G3_THINKING,
        _G3_CITATIONS,
        _G3_HALLUCINATIONS,
    )

    def _default_system(self, conv: Conversation, ctx: RenderContext) -> str:
        docs = _documents(ctx)
        controls = _controls(ctx)
        t = self.system_texts
        text = (
            f"Knowledge Cutoff Date: April 2024.{t.sep}Today's Date: "
            + ctx.now.strftime("%B %d, %Y")
            + f".{t.sep}You are Granite, developed by IBM."
        )
        if conv.tools and docs:
            text += t.tools_and_docs
        elif conv.tools:
            text += t.tools
        elif docs:
            text += t.docs
        elif ctx.option("thinking"):
            text += t.thinking
        else:
            text += " You are a helpful AI assistant."
        if "citations" in controls and docs:
            text += t.citations
        if "hallucinations" in controls and docs:
            text += t.hallucinations
        return text

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        sys_msg, msgs = conv.split_system()
        b.control(_SOR + "system" + _EOR)
        if sys_msg is not None:
            if sys_msg.content is None:
                raise ValidationError(
                    "system content must be a string", index=sys_msg.index, field="content"
                )
            b.content(sys_msg.text, sys_msg.index)
            b.control(_EOT + "\n", sys_msg.index)
        else:
            b.control(self._default_system(conv, ctx) + _EOT + "\n")
        if conv.tools:
            b.control(_SOR + self.tools_role + _EOR)
            b.content(_tojson(_raw_tools(conv), indent=4))
            b.control(_EOT + "\n")
        self._render_documents(b, ctx)
        for m in msgs:
            self._render_message(b, m, ctx)
        if ctx.add_generation_prompt and msgs:
            controls = _controls(ctx)
            b.control(_SOR + "assistant" + (" " + _tojson(controls) if controls else "") + _EOR)
        return b.segments

    def _render_documents(self, b: SegmentBuilder, ctx: RenderContext) -> None:
        for k, doc in enumerate(_documents(ctx)):
            if not isinstance(doc, Mapping):
                raise ValidationError(
                    "must be an object with doc_id and text", field=f"documents[{k}]"
                )
            b.control(_SOR + 'document {"document_id": "')
            b.content(_jinja_str(doc.get("doc_id", "")))
            b.control('"}' + _EOR + "\n")
            b.content(_jinja_str(doc.get("text", "")))
            b.control(_EOT + "\n")

    def _render_message(self, b: SegmentBuilder, m: Message, ctx: RenderContext) -> None:
        trained = m.role == "assistant"
        b.control(_SOR + m.role + _EOR, m.index)
        if m.tool_calls:  # the model's own '<|tool_call|>' form, after its text if any
            # (the official template writes only the text: refused with strict_history)
            if text_beside_calls(self.name, m, ctx):
                b.content(m.text, m.index, True)
            calls = [{"name": c.name, "arguments": c.arguments} for c in m.tool_calls]
            b.control(TOOL_CALL_TOKEN, m.index, True)
            b.content(_tojson(calls), m.index, True)
        elif m.content is None:
            raise ValidationError("content must be a string", index=m.index, field="content")
        else:
            b.content(m.text, m.index, trained)
        b.control(_EOT, m.index, trained)
        b.control("\n", m.index)


_G32_TOOLS = (
    " You are a helpful AI assistant with access to the following tools. When a tool is required "
    "to answer the user's query, respond with <|tool_call|> followed by a JSON list of tools used. "
    "If a tool does not exist in the provided list of tools, notify the user that you do not have "
    "the ability to fulfill the request."
)
_G32_DOCS = (
    " Write the response to the user's input by strictly aligning with the facts in the provided "
    "documents. If the information needed to answer the question is not available in the "
    "documents, inform the user that the question cannot be answered based on the available data."
)
_G32_THINKING = _G3_THINKING.replace(
    "Write your thoughts between <think></think> and write your response between "
    "<response></response>",
    "Write your thoughts after 'Here is my thought process:' and write your response after "
    "'Here is my response:'",
)
_G32_CITATIONS = (
    "\n\nIn your response, use the symbols <co> and </co> to indicate when a fact comes from a "
    "document in the search result, e.g <co>0</co> for a fact from document 0. Afterwards, list "
    "all the citations with their corresponding documents in an ordered list."
)
_G32_HALLUCINATIONS = (
    "\n\nFinally, after the response is written, include a numbered list of sentences from the "
    "response that are potentially hallucinated and not based in the documents."
)


class Granite32(Granite3):
    """Granite 3.2 instruct: Granite 3's turns, with its own system prompts — ``thinking=True``
    asks for ``Here is my thought process: … Here is my response: …`` (read by the
    ``granite`` reasoning parser, as vLLM's) — a ``tools`` turn and one ``documents`` turn.

    Byte-identical to the official template (the chat template of the model's GGUF,
    ``ibm-granite-granite-3.2-8b-instruct.jinja``); tool calls as :class:`Granite3`.
    """

    name = "granite3.2"
    aliases = ("granite-3.2",)
    model_ids = (
        "ibm-granite/granite-3.2-2b-instruct",
        "ibm-granite/granite-3.2-8b-instruct",
    )
    model_patterns = (r"granite-?3\.2-\d+b-instruct",)
    description = (
        "Granite 3.2: <|start_of_role|>role<|end_of_role|>…<|end_of_text|>; <|tool_call|> JSON "
        "list; thinking as 'Here is my thought process:' … 'Here is my response:'."
    )
    source = "official Jinja: ibm-granite-granite-3.2-8b-instruct.jinja (the GGUF's template)"
    official_templates = ("ibm-granite-granite-3.2-8b-instruct.jinja",)
    tools_role = "tools"

    system_texts = _SystemTexts(
        "\n",
        _G32_TOOLS,
        _G32_DOCS,
        _G32_TOOLS + "\n\n" + _G32_DOCS[1:],
        _G32_THINKING,
        _G32_CITATIONS,
        _G32_HALLUCINATIONS,
    )

    def _render_documents(self, b: SegmentBuilder, ctx: RenderContext) -> None:
        docs = _documents(ctx)
        if not docs:
            return
        b.control(_SOR + "documents" + _EOR)
        for k, doc in enumerate(docs):
            if not isinstance(doc, Mapping):
                raise ValidationError("must be an object with text", field=f"documents[{k}]")
            b.control(f"Document {k}\n")
            b.content(_jinja_str(doc.get("text", "")))
            if k < len(docs) - 1:
                b.control("\n\n")
        b.control(_EOT + "\n")


def _jinja_str(value: Any) -> str:
    """How Jinja's ``string`` filter / printing shows a value."""
    return value if isinstance(value, str) else str(value)


_G4_DEFAULT = (
    "You are a helpful assistant. Please ensure responses are professional, accurate, and safe."
)
_G4_TOOLS_PREFIX = (
    "You are a helpful assistant with access to the following tools. You may call one or more tools to "
    "assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML "
    "tags:\n<tools>"
)
_G4_TOOLS_SUFFIX = (
    "\n</tools>\n\nFor each tool call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call>. If a tool does not exist in the provided list of tools, notify "
    "the user that you do not have the ability to fulfill the request."
)
_G4_DOCS_PREFIX = (
    "You are a helpful assistant with access to the following documents. You may use one or more documents "
    "to assist with the user query.\n\nYou are given a list of documents within <documents></documents> "
    "XML tags:\n<documents>"
)
_G4_DOCS_SUFFIX = (
    "\n</documents>\n\nWrite the response to the user's input by strictly aligning with the facts in the "
    "provided documents. If the information needed to answer the question is not available in the "
    "documents, inform the user that the question cannot be answered based on the available data."
)


class Granite4(Template):
    """Granite 4.0: tools and documents in the system turn, Hermes-style ``<tool_call>`` JSON, tool results in user turns."""

    name = "granite4"
    aliases: tuple[str, ...] = ("granite-4", "granite4.0", "granite-4.0")
    model_ids: tuple[str, ...] = (
        "ibm-granite/granite-4.0-h-small",
        "ibm-granite/granite-4.0-h-tiny",
        "ibm-granite/granite-4.0-h-micro",
        "ibm-granite/granite-4.0-micro",
        "ibm-granite/granite-4.0-h-1b",
        "ibm-granite/granite-4.0-h-350m",
        "ibm-granite/granite-4.0-1b",
        "ibm-granite/granite-4.0-350m",
    )
    model_patterns: tuple[str, ...] = (r"granite-?4",)
    description = "Granite 4: <|start_of_role|>…<|end_of_text|>; <tool_call>{json}</tool_call>; <tool_response> in user turns."
    source = "official Jinja: ibm-granite-granite-4.0.jinja"
    official_templates: tuple[str, ...] = ("ibm-granite-granite-4.0.jinja",)
    supports_tools = True
    tool_parser_class = GraniteParser
    default_options: ClassVar[Mapping[str, Any]] = {"documents": None}
    control_tokens = (_SOR, _EOR, _EOT)
    generation_config = GenerationConfig(
        session_len=131072,
        stop_words=(_EOT,),
        top_p=1.0,
        temperature=0.0,
    )
    #: Granite 4.1 writes no system turn at all when there is nothing to say.
    default_system: ClassVar[str | None] = _G4_DEFAULT

    def _system_pieces(self, b: SegmentBuilder, conv: Conversation, ctx: RenderContext) -> None:
        msgs = conv.messages
        docs = _documents(ctx)
        pieces: list[tuple[str, bool, int | None]] = []  # (text, is_content, message)
        first = msgs[0] if msgs and msgs[0].role == "system" else None
        if first is not None and first.content:
            pieces.append((first.content, True, first.index))
        blocks: list[list[tuple[str, bool, int | None]]] = []
        if conv.tools:
            block: list[tuple[str, bool, int | None]] = [(_G4_TOOLS_PREFIX, False, None)]
            for t in conv.tools:
                block += [("\n", False, None), (t.json, True, None)]
            blocks.append([*block, (_G4_TOOLS_SUFFIX, False, None)])
        if docs:
            block = [(_G4_DOCS_PREFIX, False, None)]
            for d in docs:
                block += [("\n", False, None), (_tojson(d), True, None)]
            blocks.append([*block, (_G4_DOCS_SUFFIX, False, None)])
        for k, block in enumerate(blocks):
            if first is not None or k:
                pieces.append(("\n\n", False, None))
            pieces += block
        if not any(text for text, _, _ in pieces):
            if self.default_system is None:
                return
            pieces = [(self.default_system, False, None)]
        b.control(_SOR + "system" + _EOR)
        for text, is_content, index in pieces:
            if is_content:
                b.content(text, index)
            else:
                b.control(text, index)
        b.control(_EOT + "\n")

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = ctx.builder()
        self._system_pieces(b, conv, ctx)
        msgs = conv.messages
        for pos, m in enumerate(msgs):
            if m.role == "user" or (m.role == "system" and pos > 0):
                b.turn(_SOR + m.role + _EOR, m.text, _EOT + "\n", "", m.index)
            elif m.role == "assistant":
                b.control(_SOR + "assistant" + _EOR, m.index)
                b.content(m.text, m.index, True)
                for j, call in enumerate(m.tool_calls):
                    if j or m.text:
                        b.control("\n", m.index, True)
                    b.control('<tool_call>\n{"name": "', m.index, True)
                    b.content(call.name, m.index, True)
                    b.control('", "arguments": ', m.index, True)
                    b.content(_tojson(call.arguments), m.index, True)
                    b.control("}\n</tool_call>", m.index, True)
                b.control(_EOT, m.index, True)
                b.control("\n", m.index)
            elif m.role == "tool":
                if pos == 0 or msgs[pos - 1].role != "tool":
                    b.control(_SOR + "user" + _EOR, m.index)
                b.turn("\n<tool_response>\n", m.text, "\n</tool_response>", "", m.index)
                if pos == len(msgs) - 1 or msgs[pos + 1].role != "tool":
                    b.control(_EOT + "\n", m.index)
        if ctx.add_generation_prompt:
            b.control(_SOR + "assistant" + _EOR)
        return b.segments


class Granite41(Granite4):
    """Granite 4.1: as Granite 4.0, without a default system prompt."""

    name = "granite4.1"
    aliases = ("granite-4.1",)
    model_ids = ()
    model_patterns = (r"granite-?4\.1",)
    description = "Granite 4.1: like Granite 4.0 without the default system prompt."
    source = "official Jinja: ibm-granite-granite-4.1.jinja"
    official_templates = ("ibm-granite-granite-4.1.jinja",)
    default_system = None


GRANITE3 = Granite3()
GRANITE32 = Granite32()
GRANITE4 = Granite4()
GRANITE41 = Granite41()

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (GRANITE3, GRANITE32, GRANITE4, GRANITE41)
