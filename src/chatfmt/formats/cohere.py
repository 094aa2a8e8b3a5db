"""Cohere Command-R / Command-R+: the ``default`` chat template and the ``tool_use`` template.

Like Hugging Face (whose tokenizer config holds both), chatfmt uses the ``tool_use``
template when tools are given or the conversation has tool calls or tool results,
and the ``default`` template otherwise. Tools are shown to the model as Python
function signatures; tool calls are an ``Action:`` JSON list; results come back in
``<results>`` system turns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..config import GenerationConfig
from ..errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from ..protocol import Conversation, Message, Tool
from ..registry import register
from ..segments import Segment, SegmentBuilder
from ..template import RenderContext, Template

_SOT = "<|START_OF_TURN_TOKEN|>"
_EOT = "<|END_OF_TURN_TOKEN|>"
_SYSTEM = _SOT + "<|SYSTEM_TOKEN|>"
_USER = _SOT + "<|USER_TOKEN|>"
_CHATBOT = _SOT + "<|CHATBOT_TOKEN|>"

_DEFAULT_TOOL_SYSTEM = (
    "## Task and Context\nYou help people answer their questions and other requests interactively. "
    "You will be asked a very wide array of requests on all kinds of topics. You will be equipped with "
    "a wide range of search engines or similar tools to help you, which you use to research your answer. "
    "You should focus on serving the user's needs as best you can, which will be wide-ranging.\n\n"
    "## Style Guide\nUnless the user asks for a different style of answer, you should answer in full "
    "sentences, using proper grammar and spelling."
)
_PREAMBLE = (
    _SYSTEM
    + "# Safety Preamble"
    + "\nThe instructions in this section override those in the task description and style guide "
    "sections. Don't answer questions that are harmful or immoral."
    + "\n\n# System Preamble"
    + "\n## Basic Rules"
    + "\nYou are a powerful conversational AI trained by Cohere to help people. You are augmented by a "
    "number of tools, and your job is to use and consume the output of these tools to best help the user. "
    "You will see a conversation history between yourself and a user, ending with an utterance from the "
    "user. You will then see a specific instruction instructing you what kind of response to generate. "
    "When you answer the user's requests, you cite your sources in your answers, according to those "
    "instructions." + "\n\n# User Preamble" + "\n"
)
_TOOLS_HEADER = (
    "\n\n## Available Tools\nHere is a list of tools that you have available to you:\n\n"
)
_ACTION_INSTRUCTION = (
    _SYSTEM
    + "Write 'Action:' followed by a json-formatted list of actions that you want to perform in order to "
    "produce a good response to the user's last input. You can use any of the supplied tools any number "
    "of times, but you should aim to execute the minimum number of necessary actions for the input. You "
    "should use the `directly-answer` tool if calling the other tools is unnecessary. The list of actions "
    "you want to call should be formatted as a list of json objects, for example:\n```json\n[\n    {\n"
    '        "tool_name": title of the tool in the specification,\n'
    '        "parameters": a dict of parameters to input into the tool as they are defined in the specs, '
    "or {} if it takes no parameters\n    }\n]```" + _EOT
)

_BASIC_TYPES = {"string": "str", "number": "float", "integer": "int", "boolean": "bool"}
_MISSING: Any = object()


def jinja_indent(text: str, width: int, first: bool = False) -> str:
    """Jinja's ``indent`` filter (lines split like ``str.splitlines``; blank lines stay unindented)."""
    pad = " " * width
    lines = (text + "\n").splitlines()
    out = lines.pop(0)
    if lines:
        out += "\n" + "\n".join(pad + line if line else line for line in lines)
    return pad + out if first else out


def _get(obj: Any, key: str) -> Any:
    return obj.get(key, _MISSING) if isinstance(obj, Mapping) else _MISSING


def _py_type(spec: Any, where: str) -> str:
    """The tool_use template's ``json_to_python_type`` macro."""
    if spec is _MISSING:
        raise ValidationError("schema needs 'items'/'additionalProperties' here", field=where)
    kind = _get(spec, "type")
    if isinstance(kind, str) and kind in _BASIC_TYPES:
        return _BASIC_TYPES[kind]
    if kind == "array":
        # The template reads ``json_spec.items``, which Jinja resolves to the dict's ``items`` method.
        return "List[" + _py_type({}, where) + "]"
    if kind == "object":
        return "Dict[str, " + _py_type(_get(spec, "additionalProperties"), where) + "]"
    if kind is _MISSING:
        return "Union[]"
    if isinstance(kind, str):
        # The template recurses into the string's characters forever (RecursionError).
        raise ValidationError(f"unsupported JSON-schema type {kind!r} for Command-R", field=where)
    if isinstance(kind, (str, list, tuple, Mapping)):
        return "Union[" + ",".join(_py_type({"type": t}, where) for t in kind) + "]"
    return "Any"


def _render_tool(b: SegmentBuilder, k: int, tool: Tool) -> None:
    """One tool as a Python signature with a docstring (``new_tool_parser``)."""
    where = f"tools[{k}].function"
    if tool.type != "function":
        raise UnsupportedFeatureError(
            "Command-R has no code-interpreter tool", field=f"tools[{k}].type"
        )
    if "parameter_definitions" in tool.raw:
        raise UnsupportedFeatureError(
            "Cohere-style 'parameter_definitions' tools are not supported; use OpenAI function tools",
            field=f"tools[{k}]",
        )
    fn = tool.raw.get("function", {})
    if "parameters" not in fn:
        raise ValidationError(
            "Command-R's template needs 'parameters'", field=f"{where}.parameters"
        )
    params = fn["parameters"]
    props = _get(params, "properties")
    props = props if isinstance(props, Mapping) else {}
    required = _get(params, "required")
    if required is _MISSING:
        required = ()
    elif not isinstance(required, (list, tuple, str, Mapping)):
        raise ValidationError("must be a list", field=f"{where}.parameters.required")
    sigs: list[tuple[str, str, Any]] = []
    for pname, fields in props.items():
        ptype = _py_type(fields, f"{where}.parameters.properties.{pname}")
        sigs.append((pname, ptype if pname in required else f"Optional[{ptype}]", fields))
    b.control("```python\ndef ")
    b.content(tool.name)
    b.control("(")
    for j, (pname, ptype, _) in enumerate(sigs):
        b.control(", " if j else "")
        b.content(pname)
        b.control(": " + (ptype if not ptype.startswith("Optional[") else ptype + " = None"))
    b.control(') -> List[Dict]:\n    """')
    desc = fn.get("description", _MISSING)
    b.content("" if desc is _MISSING else str(desc))
    if sigs:
        b.control("\n\n    Args:\n        ")
        for j, (pname, ptype, fields) in enumerate(sigs):
            pdesc = _get(fields, "description")
            if not isinstance(pdesc, str):
                raise ValidationError(
                    "Command-R's template needs a string 'description' for every parameter",
                    field=f"{where}.parameters.properties.{pname}.description",
                )
            b.control("\n        " if j else "")
            b.content(pname)
            b.control(f" ({ptype}): ")
            b.content(pdesc)
    b.control('\n    """\n    pass\n```')


def _trim(m: Message) -> str:
    """``content|trim`` as Jinja does it (``None`` prints as ``"None"``)."""
    return ("None" if m.content is None else m.content).strip()


def _render_calls(b: SegmentBuilder, m: Message) -> None:
    b.control("\nAction:\n```json\n[\n", m.index, True)
    for j, call in enumerate(m.tool_calls):
        if call.is_code:
            raise UnsupportedFeatureError(
                "Command-R has no code-interpreter call format",
                index=m.index,
                field=f"tool_calls[{j}]",
            )
        args = call.arguments
        if not isinstance(args, (Mapping, list, str)):
            raise ValidationError(
                "Command-R's template needs object arguments",
                index=m.index,
                field=f"tool_calls[{j}].function.arguments",
            )
        b.control('    {\n        "tool_name": "', m.index, True)
        b.content(call.name, m.index, True)
        b.control('",\n        "parameters": ', m.index, True)
        if len(args) > 0:
            b.content(
                jinja_indent(json.dumps(args, ensure_ascii=False, indent=4), 8), m.index, True
            )
            b.control("\n", m.index, True)
        else:
            b.control("{}\n", m.index, True)
        b.control("    }" + (",\n" if j < len(m.tool_calls) - 1 else ""), m.index, True)
    b.control("\n]```\n", m.index, True)


class CommandR(Template):
    """Command-R / Command-R+ (``default`` and ``tool_use`` chat templates)."""

    name = "command-r"
    aliases = ("command-r-plus", "command_r", "c4ai-command-r", "cohere")
    model_ids = (
        "CohereForAI/c4ai-command-r-v01",
        "CohereForAI/c4ai-command-r-plus",
        "CohereForAI/c4ai-command-r-plus-08-2024",
        "CohereForAI/c4ai-command-r-08-2024",
        "CohereForAI/aya-23-8B",
        "CohereForAI/aya-23-35B",
    )
    model_patterns = (r"command-?r(?!7b)", r"aya-23")
    description = "Command-R: <|START_OF_TURN_TOKEN|><|USER_TOKEN|>…<|END_OF_TURN_TOKEN|>; tools as Python signatures."
    source = "official Jinja: ollama-command-r-35b.jinja (default) and CohereForAI-c4ai-command-r-plus-tool_use.jinja"
    official_templates = (
        "ollama-command-r-35b.jinja",
        "llamacpp-CohereForAI-c4ai-command-r-plus.jinja",
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
    )
    supports_tools = True
    tool_parser = "command_r"
    control_tokens = (
        "<BOS_TOKEN>",
        _SOT,
        _EOT,
        "<|SYSTEM_TOKEN|>",
        "<|USER_TOKEN|>",
        "<|CHATBOT_TOKEN|>",
        "<results>",
        "</results>",
    )
    generation_config = GenerationConfig(
        session_len=131072,
        stop_words=(_EOT,),
        top_p=0.75,
        temperature=0.3,
    )
    bos = "<BOS_TOKEN>"

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        uses_tools = bool(conv.tools) or any(
            m.tool_calls or m.role == "tool" for m in conv.messages
        )
        if uses_tools:
            return self._render_tool_use(conv, ctx)
        return self._render_default(conv, ctx)

    def _render_default(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = SegmentBuilder()
        b.control(self.bos)
        msgs = list(conv.messages)
        if msgs and msgs[0].role == "system":
            sys_msg = msgs.pop(0)
            if sys_msg.content is None:
                raise ValidationError(
                    "system content must be a string", index=sys_msg.index, field="content"
                )
            b.control(_SYSTEM, sys_msg.index)
            b.content(sys_msg.text, sys_msg.index)
            b.control(_EOT, sys_msg.index)
        for pos, m in enumerate(msgs):
            if (m.role == "user") != (pos % 2 == 0):
                raise RoleOrderError(
                    "conversation roles must alternate user/assistant/user/assistant/...",
                    index=m.index,
                    field="role",
                )
            if m.role not in ("user", "assistant"):
                continue  # the default template writes nothing for other roles
            if m.content is None:
                raise ValidationError("content must be a string", index=m.index, field="content")
            trained = m.role == "assistant"
            b.control(_USER if m.role == "user" else _CHATBOT, m.index)
            b.content(m.text.strip(), m.index, trained)
            b.control(_EOT, m.index, trained)
        if ctx.add_generation_prompt:
            b.control(_CHATBOT)
        return b.segments

    def _render_tool_use(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        b = SegmentBuilder()
        b.control(self.bos)
        msgs = list(conv.messages)
        b.control(_PREAMBLE)
        if msgs and msgs[0].role == "system":
            sys_msg = msgs.pop(0)
            if sys_msg.content is None:
                raise ValidationError(
                    "system content must be a string", index=sys_msg.index, field="content"
                )
            b.content(sys_msg.text, sys_msg.index)
        else:
            b.control(_DEFAULT_TOOL_SYSTEM)
        b.control(_TOOLS_HEADER)
        for k, tool in enumerate(conv.tools):
            b.control("\n\n" if k else "")
            _render_tool(b, k, tool)
        b.control(_EOT)
        for m in msgs:
            if m.role == "user":
                b.control(_USER, m.index)
                b.content(_trim(m), m.index)
                b.control(_EOT, m.index)
            elif m.role == "system":
                b.control(_SYSTEM, m.index)
                b.content(_trim(m), m.index)
                b.control(_EOT, m.index)
            elif m.role == "assistant" and m.tool_calls:
                b.control(_CHATBOT, m.index)
                b.content(_trim(m), m.index, True)
                _render_calls(b, m)
            elif m.role == "assistant":
                b.control(_CHATBOT, m.index)
                b.content(_trim(m), m.index, True)
                b.control(_EOT, m.index, True)
            else:
                b.control(_SYSTEM + "<results>\n", m.index)
                b.content(_trim(m), m.index)
                b.control("</results>" + _EOT, m.index)
        b.control(_ACTION_INSTRUCTION)
        if ctx.add_generation_prompt:
            b.control(_CHATBOT)
        return b.segments


COMMAND_R = register(CommandR())
