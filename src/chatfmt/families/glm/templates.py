"""GLM families: ChatGLM3, GLM-4 (glm-4-9b-chat), GLM-4.5/4.6 and GLM-4.7 (native templates).

All of them use role tokens (``<|system|>``, ``<|user|>``, ``<|assistant|>``,
``<|observation|>``) and no end-of-turn marker: a reply ends when the model emits
the next role token (``<|user|>`` or ``<|observation|>``, the stop words). That
token is marked trained and belongs to the reply, so ``sequence_start=False``
renders what follows it.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
from collections.abc import Mapping
from typing import Any, ClassVar

from ...config import GenerationConfig
from ...errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from ...history_rules import EARLIER_THINKING_DROPPED
from ...parsing.reasoning import ThinkParser
from ...protocol import Conversation, Message, ToolCall
from ...segments import Segment, SegmentBuilder
from ...template import RenderContext, Template
from ..chatml.markers import ENDOFTEXT
from ..internlm.templates import function_objects, tools_json
from .markers import (
    ARG_KEY,
    ARG_KEY_CLOSE,
    ARG_VALUE,
    ARG_VALUE_CLOSE,
    ASSISTANT,
    EOS,
    GMASK,
    MASK,
    OBSERVATION,
    SMASK,
    SOP,
    SYSTEM,
    THINK,
    THINK_CLOSE,
    TOOL_CALL,
    TOOL_CALL_CLOSE,
    TOOL_RESPONSE,
    TOOL_RESPONSE_CLOSE,
    USER,
)
from .parser import ChatGLM3Parser, GLM4Parser, GLM45Parser

_STOP_ROLES = ("user", "observation")


class _RoleWriter:
    """A segment builder that knows whether the last output was an assistant reply.

    The role token right after a reply (``<|user|>``/``<|observation|>``) is what the
    model generated to end it: it is written trained, under the reply's index.
    """

    def __init__(self, b: SegmentBuilder) -> None:
        self.b = b
        self.reply: int | None = None

    def role(self, role: str, index: int | None) -> None:
        token = f"<|{role}|>"
        if self.reply is not None and role in _STOP_ROLES:
            self.b.control(token, self.reply, trained=True)
        else:
            self.b.control(token, index)
        self.reply = None


def _text(text: str | None) -> str:
    """Message text; a ``null`` content renders like an absent one (empty).

    The official templates print the string ``"None"`` for an explicit ``null``
    (a Jinja artifact) and nothing for a missing key; chatfmt cannot tell the two
    apart after validation and follows the missing-key behaviour.
    """
    return "" if text is None else text


# --------------------------------------------------------------------------- ChatGLM3
#: System text ChatGLM3 puts before the tool list (seed: ChatGLM3 format).
CHATGLM3_TOOLS_PROMPT = (
    "Answer the following questions as best as you can. You have access to the following tools:"
)
#: The code-execution system prompt of the ChatGLM3 seed.
CHATGLM3_INTERPRETER_PROMPT = (
    "You are an intelligent AI assistant, named ChatGLM3. You are connected to a computer, but "
    "please note that you cannot connect to the internet. When using Python to solve tasks, you can "
    "run the code and get the results. If there are errors in the running results, you need to "
    "improve the code as much as possible. You can process files uploaded by users to your "
    "computer, and the default storage path for files is /mnt/data/."
)


def python_literal(value: Any) -> str:
    """A JSON value as a Python literal (strings double-quoted, ``True``/``False``/``None``)."""
    if value is None:
        return "None"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}: {python_literal(v)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    return json.dumps(value, ensure_ascii=False)


def chatglm3_tool_call(call: ToolCall, index: int) -> str:
    """``tool_call(k=v, …)`` with Python-literal values (ChatGLM3 evaluates this line)."""
    args = call.arguments
    if not isinstance(args, Mapping):
        raise ValidationError(
            "ChatGLM3 tool-call arguments must be a JSON object", index=index, field="tool_calls"
        )
    parts = []
    for key, value in args.items():
        if not key.isidentifier() or keyword.iskeyword(key):
            raise UnsupportedFeatureError(
                f"argument name {key!r} is not a Python identifier (ChatGLM3 writes tool_call(name=value))",
                index=index,
                field="tool_calls",
            )
        parts.append(f"{key}={python_literal(value)}")
    return "tool_call(" + ", ".join(parts) + ")"


class ChatGLM3Template(Template):
    """ChatGLM3: ``[gMASK]sop`` then ``<|role|>{metadata}\\n`` headed turns.

    Plain chat equals ``THUDM-chatglm3-6b.jinja``, which writes a space after the
    header line (``<|user|>\\n Hello``): it stands for the SentencePiece prefix space
    the ChatGLM3 tokenizer adds to each message. ``prefix_space=False`` drops it
    (the seed's text form). Tools go in a system turn as a JSON list; a call is a
    turn ``<|assistant|>NAME\\n```python\\ntool_call(k=v)\\n```` and its result an
    ``<|observation|>`` turn; code-interpreter calls use metadata ``interpreter``.
    """

    name = "chatglm3"
    aliases = ("chatglm3-6b", "glm3")
    model_ids = (
        "THUDM/chatglm3-6b",
        "THUDM/chatglm3-6b-32k",
        "THUDM/chatglm3-6b-128k",
        "zai-org/chatglm3-6b",
        "zai-org/chatglm3-6b-32k",
        "zai-org/chatglm3-6b-128k",
    )
    model_patterns = (r"^chatglm3",)
    generation_config = GenerationConfig(session_len=8192, stop_words=(USER, OBSERVATION, EOS))
    description = (
        "ChatGLM3: [gMASK]sop, <|role|>metadata lines, tool_call(...) and interpreter turns."
    )
    source = "official Jinja: THUDM-chatglm3-6b.jinja; seed: ChatGLM3 chat format"
    supports_tools = True
    control_tokens = (
        GMASK,
        MASK,
        SMASK,
        SYSTEM,
        USER,
        ASSISTANT,
        OBSERVATION,
    )
    official_templates = ("THUDM-chatglm3-6b.jinja",)
    tool_parser_class = ChatGLM3Parser
    default_options: ClassVar[Mapping[str, Any]] = {
        "prefix_space": True,
        "tools_json": "seed",
        "interpreter_prompt": CHATGLM3_INTERPRETER_PROMPT,
    }

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        check_chatglm3_order(conv.messages)
        w = _RoleWriter(ctx.builder())
        b = w.b
        sp = " " if ctx.option("prefix_space") else ""
        b.control("[gMASK]sop")
        if conv.has_code_interpreter:
            w.role("system", None)
            b.control(f"\n{sp}{ctx.option('interpreter_prompt')}")
        functions = function_objects(conv.tools)
        if functions:
            w.role("system", None)
            b.control(f"\n{sp}{CHATGLM3_TOOLS_PROMPT}\n")
            b.content(tools_json(functions, str(ctx.option("tools_json"))))
        for m in conv.messages:
            i = m.index
            if m.role == "assistant":
                self._assistant(w, m, sp)
                continue
            w.role("observation" if m.role == "tool" else m.role, i)
            b.control(f"\n{sp}", i)
            b.content(m.text, i)
        if ctx.add_generation_prompt:
            w.role("assistant", None)
        return b.segments

    def _assistant(self, w: _RoleWriter, m: Message, sp: str) -> None:
        b, i = w.b, m.index
        opened = False
        if m.text or not m.tool_calls:
            w.role("assistant", i)
            b.control(f"\n{sp}", i, trained=True)
            b.content(_text(m.content), i, trained=True)
            opened = True
        for call in m.tool_calls:
            if opened:
                b.control(ASSISTANT, i, trained=True)
            else:
                w.role("assistant", i)
                opened = True
            if call.is_code:
                b.control(f"interpreter\n{sp}```python\n", i, trained=True)
                b.content(call.code or "", i, trained=True)
            else:
                b.content(call.name, i, trained=True)
                b.control(f"\n{sp}```python\n", i, trained=True)
                b.content(chatglm3_tool_call(call, i), i, trained=True)
            b.control("\n```", i, trained=True)
        w.reply = i


def check_chatglm3_order(msgs: tuple[Message, ...]) -> None:
    """Role-order rules of the ChatGLM3 format (seed): raise :class:`RoleOrderError`.

    System only at the beginning; no two user messages in a row; an assistant
    needs a user message before it; an observation (tool) follows an assistant
    (or another observation of the same call batch).
    """
    seen_user = False
    prev: Message | None = None
    for m in msgs:
        if m.role == "system" and prev is not None and prev.role != "system":
            raise RoleOrderError(
                "ChatGLM3 allows system messages only at the beginning", index=m.index, field="role"
            )
        if m.role == "user" and prev is not None and prev.role == "user":
            raise RoleOrderError(
                "ChatGLM3 does not allow two user messages in a row", index=m.index, field="role"
            )
        if m.role == "assistant" and not seen_user:
            raise RoleOrderError(
                "ChatGLM3 needs a user message before an assistant message",
                index=m.index,
                field="role",
            )
        if m.role == "tool" and (prev is None or prev.role not in ("assistant", "tool")):
            raise RoleOrderError(
                "ChatGLM3 observations (tool results) must follow an assistant message",
                index=m.index,
                field="role",
            )
        seen_user = seen_user or m.role == "user"
        prev = m


# --------------------------------------------------------------------------- GLM-4
GLM4_TOOLS_HEADER = (
    "你是一个名为 ChatGLM 的人工智能助手。你是基于智谱AI训练的语言模型 GLM-4 模型开发的，"
    "你的任务是针对用户的问题和要求提供适当的答复和支持。\n\n# 可用工具"
)
_GLM4_FUNCTION_NOTE = "\n在调用上述函数时，请使用 Json 格式表示调用的参数。"
GLM4_PYTHON_TOOL = (
    "\n## python\n\n当你向 `python` 发送包含 Python 代码的消息时，该代码将会在一个有状态的 Jupyter notebook "
    "环境中执行。\n`python` 返回代码执行的输出，或在执行 60 秒后返回超时。\n`/mnt/data` 将会持久化存储你的文件。"
    "在此会话中，`python` 无法访问互联网。不要使用 `python` 进行任何网络请求或者在线 API 调用，这些在线内容的访问将不会成功。"
)
_GLM_STOPS = (USER, OBSERVATION, ENDOFTEXT)
_GLM_TOKENS = (
    GMASK,
    SOP,
    SYSTEM,
    USER,
    ASSISTANT,
    OBSERVATION,
    ENDOFTEXT,
)


class GLM4Template(Template):
    """GLM-4 chat (glm-4-9b-chat): ``[gMASK]<sop>``, ``<|role|>{metadata}\\n{content}`` turns.

    Byte-identical to ``THUDM-glm-4-9b-chat.jinja`` for the GLM-4 message form the
    model's own API server builds: tools attached to the first message (the
    template's Chinese tools system prompt, ``## name`` + the function as indented
    JSON; a ``code_interpreter`` tool is its ``python`` tool), an assistant call as
    ``<|assistant|>NAME\\n{arguments JSON}`` (code calls: metadata ``python`` and the
    code), a tool result as ``<|observation|>\\n{content}``. Messages with empty
    content are left out, as the template does. No date is printed. (The template's
    sections start with one newline: Jinja's ``trim_blocks`` eats the one after each tag.)
    """

    name = "glm4"
    aliases = ("glm-4", "glm-4-chat", "glm4-chat")
    model_ids = (
        "THUDM/glm-4-9b-chat",
        "THUDM/glm-4-9b-chat-1m",
        "zai-org/glm-4-9b-chat",
        "zai-org/glm-4-9b-chat-1m",
    )
    model_patterns = (r"^glm-4-9b-chat",)
    generation_config = GenerationConfig(session_len=131072, stop_words=_GLM_STOPS)
    description = "GLM-4 chat: [gMASK]<sop>, <|role|>metadata turns, name-line + JSON tool calls."
    source = "official Jinja: THUDM-glm-4-9b-chat.jinja"
    supports_tools = True
    control_tokens = _GLM_TOKENS
    official_templates = ("THUDM-glm-4-9b-chat.jinja",)
    tool_parser_class = GLM4Parser

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        w = _RoleWriter(ctx.builder())
        b = w.b
        b.control("[gMASK]<sop>")
        if conv.tools:
            b.control(f"<|system|>\n{GLM4_TOOLS_HEADER}")
            for tool in conv.tools:
                if tool.type == "code_interpreter":
                    b.control(GLM4_PYTHON_TOOL)
                    continue
                fn = tool.function
                b.control("\n## ")
                b.content(str(fn.get("name")))
                b.control("\n\n")
                b.content(json.dumps(fn, ensure_ascii=False, indent=4))
                b.control(_GLM4_FUNCTION_NOTE)
        for m in conv.messages:
            i = m.index
            if m.role != "assistant":
                if m.text:
                    w.role("observation" if m.role == "tool" else m.role, i)
                    b.control("\n", i)
                    b.content(m.text, i)
                continue
            turns = [("", m.text)] if m.text else []
            for call in m.tool_calls:
                turns.append(
                    ("python", call.code or "")
                    if call.is_code
                    else (call.name, call.arguments_json)
                )
            opened = False
            for metadata, text in turns:
                if not text:
                    continue
                if opened:
                    b.control(ASSISTANT, i, trained=True)
                else:
                    w.role("assistant", i)
                    opened = True
                b.content(metadata, i, trained=True)
                b.control("\n", i, trained=True)
                b.content(text, i, trained=True)
            if opened:
                w.reply = i
        if ctx.add_generation_prompt:
            w.role("assistant", None)
        return b.segments


# --------------------------------------------------------------------------- GLM-4.5 / 4.6
GLM45_TOOLS_INTRO = (
    "<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
GLM45_TOOLS_OUTRO = (
    "</tools>\n\nFor each function call, output the function name and arguments within the "
    "following XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n"
    "<arg_value>{arg-value-1}</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n"
    "<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>"
)


def _split_reasoning(m: Message) -> tuple[str, str]:
    """(reasoning, content) of an assistant message, as GLM-4.5's template derives them."""
    content = _text(m.content)
    if m.reasoning_content is not None:
        return m.reasoning_content, content
    if THINK_CLOSE in content:
        reasoning = content.split(THINK_CLOSE)[0].rstrip("\n").split(THINK)[-1].lstrip("\n")
        return reasoning, content.split(THINK_CLOSE)[-1].lstrip("\n")
    return "", content


class GLM45Template(Template):
    """GLM-4.5 / GLM-4.6: ``<think>`` reasoning and XML ``<tool_call>`` arguments.

    Byte-identical to ``GLM-4.6.jinja`` (GLM-4.5 uses the same template). Reasoning
    is kept only for assistant turns after the last user message; elsewhere an
    empty ``<think></think>`` is written. ``enable_thinking=False`` appends
    ``/nothink`` to user turns and pre-fills an empty think block.
    """

    name = "glm4.5"
    history = EARLIER_THINKING_DROPPED
    aliases = ("glm4.6", "glm-4.5", "glm-4.6", "glm45", "glm46", "glm-4.5-air")
    model_ids = (
        "zai-org/GLM-4.5",
        "zai-org/GLM-4.5-Air",
        "zai-org/GLM-4.5-FP8",
        "zai-org/GLM-4.5-Air-FP8",
        "zai-org/GLM-4.6",
        "zai-org/GLM-4.6-FP8",
    )
    model_patterns = (r"^glm-4\.[56](?!v)",)
    generation_config = GenerationConfig(session_len=131072, stop_words=_GLM_STOPS)
    description = (
        "GLM-4.5/4.6: <think> reasoning, <tool_call>name<arg_key>…<arg_value>… tool calls."
    )
    source = "official Jinja: GLM-4.6.jinja"
    supports_tools = True
    supports_reasoning = True
    control_tokens = (
        *_GLM_TOKENS,
        THINK,
        THINK_CLOSE,
        TOOL_CALL,
        TOOL_CALL_CLOSE,
        ARG_KEY,
        ARG_KEY_CLOSE,
        ARG_VALUE,
        ARG_VALUE_CLOSE,
        TOOL_RESPONSE,
        TOOL_RESPONSE_CLOSE,
    )
    official_templates = ("GLM-4.6.jinja",)
    tool_parser_class = GLM45Parser
    reasoning_parser_class = ThinkParser
    default_options: ClassVar[Mapping[str, Any]] = {"enable_thinking": True}

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        thinking = bool(ctx.option("enable_thinking"))
        w = _RoleWriter(ctx.builder())
        b = w.b
        b.control("[gMASK]<sop>")
        if conv.tools:
            b.control(GLM45_TOOLS_INTRO)
            for tool in conv.tools:  # every tool as its JSON, as the official template lists it
                b.content(tool.json)
                b.control("\n")
            b.control(GLM45_TOOLS_OUTRO)
        msgs = conv.messages
        last_user = max((m.index for m in msgs if m.role == "user"), default=-1)
        prev_role = ""
        for m in msgs:
            i = m.index
            if m.role == "user":
                text = _text(m.content)
                w.role("user", i)
                b.control("\n", i)
                b.content(text, i)
                if not thinking and not text.endswith("/nothink"):
                    b.control("/nothink", i)
            elif m.role == "system":
                w.role("system", i)
                b.control("\n", i)
                b.content(_text(m.content), i)
            elif m.role == "tool":
                if m.content is None:  # as the template does for a result without content
                    w.role("observation", i)
                    prev_role = m.role
                    continue
                if prev_role != "tool":
                    w.role("observation", i)
                b.turn("\n<tool_response>\n", m.content, "\n</tool_response>", "", i)
            else:
                self._assistant(w, m, i > last_user)
            prev_role = m.role
        if ctx.add_generation_prompt:
            w.role("assistant", None)
            if not thinking:
                b.control("\n<think></think>")
        return b.segments

    def _assistant(self, w: _RoleWriter, m: Message, after_last_user: bool) -> None:
        b, i = w.b, m.index
        reasoning, content = _split_reasoning(m)
        w.role("assistant", i)
        if after_last_user and reasoning:
            b.control("\n<think>", i, trained=True)
            b.content(reasoning.strip(), i, trained=True)
            b.control(THINK_CLOSE, i, trained=True)
        else:
            b.control("\n<think></think>", i, trained=True)
        if content.strip():
            b.control("\n", i, trained=True)
            b.content(content.strip(), i, trained=True)
        for call in m.tool_calls:
            if call.is_code:
                raise UnsupportedFeatureError(
                    f"template {self.name!r} has no code-interpreter calls",
                    index=i,
                    field="tool_calls",
                )
            args = call.arguments or {}
            if not isinstance(args, Mapping):
                raise ValidationError(
                    "tool-call arguments must be a JSON object", index=i, field="tool_calls"
                )
            b.control("\n<tool_call>", i, trained=True)
            b.content(call.name, i, trained=True)
            b.control("\n", i, trained=True)
            for key, value in args.items():
                b.control(ARG_KEY, i, trained=True)
                b.content(str(key), i, trained=True)
                b.control("</arg_key>\n<arg_value>", i, trained=True)
                b.content(
                    value if isinstance(value, str) else json.dumps(value, ensure_ascii=False),
                    i,
                    trained=True,
                )
                b.control("</arg_value>\n", i, trained=True)
            b.control(TOOL_CALL_CLOSE, i, trained=True)
        w.reply = i


# --------------------------------------------------------------------------- GLM-4.7
GLM47_TOOLS_OUTRO = (
    "</tools>\n\nFor each function call, output the function name and arguments within the "
    "following XML format:\n<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key>"
    "<arg_value>{arg-value-1}</arg_value><arg_key>{arg-key-2}</arg_key>"
    "<arg_value>{arg-value-2}</arg_value>...</tool_call>"
)


class GLM47Template(Template):
    """GLM-4.7 / GLM-4.7-Flash: GLM-4.5's format without the newlines.

    Byte-identical to ``GLM-4.7-Flash.jinja``: ``<|role|>`` tokens directly followed
    by the text, an assistant turn as ``<think>reasoning</think>answer`` (or just
    ``</think>`` when its reasoning is not kept), calls as
    ``<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>``,
    results as ``<|observation|><tool_response>…</tool_response>`` (consecutive
    results share one ``<|observation|>``). Reasoning is kept for turns after the
    last user message, or everywhere with ``clear_thinking=False``. The generation
    prompt opens ``<think>``; ``enable_thinking=False`` closes it at once (``</think>``).
    """

    name = "glm4.7"
    history = dataclasses.replace(EARLIER_THINKING_DROPPED, kept_by=("clear_thinking", False))
    aliases = ("glm-4.7", "glm4.7-flash", "glm-4.7-flash", "glm47")
    model_ids = ("zai-org/GLM-4.7", "zai-org/GLM-4.7-FP8", "zai-org/GLM-4.7-Flash")
    model_patterns = (r"^glm-4\.7",)
    generation_config = GenerationConfig(
        session_len=131072, stop_words=_GLM_STOPS, top_p=0.95, temperature=1.0
    )
    description = (
        "GLM-4.7: <|role|> tokens without newlines, <think> reasoning (prefilled), "
        "<tool_call>name<arg_key>…<arg_value>… tool calls."
    )
    source = "official Jinja: GLM-4.7-Flash.jinja"
    supports_tools = True
    supports_reasoning = True
    control_tokens = GLM45Template.control_tokens
    official_templates = ("GLM-4.7-Flash.jinja",)
    tool_parser_class = GLM45Parser
    reasoning_parser_class = ThinkParser
    default_options: ClassVar[Mapping[str, Any]] = {"enable_thinking": True, "clear_thinking": True}

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        keep_all = not ctx.option("clear_thinking")
        w = _RoleWriter(ctx.builder())
        b = w.b
        b.control("[gMASK]<sop>")
        if conv.tools:
            b.control(GLM45_TOOLS_INTRO)
            for tool in conv.tools:
                b.content(tool.json)
                b.control("\n")
            b.control(GLM47_TOOLS_OUTRO)
        msgs = conv.messages
        last_user = max((m.index for m in msgs if m.role == "user"), default=-1)
        prev_role = ""
        for m in msgs:
            i = m.index
            if m.role in ("user", "system"):
                w.role(m.role, i)
                b.content(_text(m.content), i)
            elif m.role == "tool":
                if m.content is None:  # no text: the template writes the role token only
                    w.role("observation", i)
                else:
                    if prev_role != "tool":
                        w.role("observation", i)
                    b.turn(TOOL_RESPONSE, m.content, TOOL_RESPONSE_CLOSE, "", i)
            else:
                self._assistant(w, m, keep_all or i > last_user)
            prev_role = m.role
        if ctx.add_generation_prompt:
            w.role("assistant", None)
            b.control(THINK if ctx.option("enable_thinking") else THINK_CLOSE)
        return b.segments

    @staticmethod
    def _assistant(w: _RoleWriter, m: Message, keep_reasoning: bool) -> None:
        b, i = w.b, m.index
        reasoning, content = _split_reasoning(m)
        w.role("assistant", i)
        if keep_reasoning and reasoning:
            b.control(THINK, i, trained=True)
            b.content(reasoning.strip(), i, trained=True)
            b.control(THINK_CLOSE, i, trained=True)
        else:  # a closed, empty think block the template writes (not model output)
            b.control(THINK_CLOSE, i)
        b.content(content.strip(), i, trained=True)
        for j, call in enumerate(m.tool_calls):
            if call.is_code:
                raise UnsupportedFeatureError(
                    "GLM-4.7 has no code-interpreter calls", index=i, field=f"tool_calls[{j}]"
                )
            if not isinstance(call.arguments, Mapping):
                raise ValidationError(
                    "GLM-4.7's template needs object arguments",
                    index=i,
                    field=f"tool_calls[{j}].function.arguments",
                )
            b.control(TOOL_CALL, i, trained=True)
            b.content(call.name, i, trained=True)
            for key, value in call.arguments.items():
                b.control(ARG_KEY, i, trained=True)
                b.content(str(key), i, trained=True)
                b.control("</arg_key><arg_value>", i, trained=True)
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                b.content(text, i, trained=True)
                b.control(ARG_VALUE_CLOSE, i, trained=True)
            b.control(TOOL_CALL_CLOSE, i, trained=True)
        w.reply = i


CHATGLM3 = ChatGLM3Template()
GLM4 = GLM4Template()
GLM45 = GLM45Template()
GLM47 = GLM47Template()

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (CHATGLM3, GLM4, GLM45, GLM47)
