"""glm: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

ARG_KEY = "<arg_key>"
ARG_KEY_CLOSE = "</arg_key>"
ARG_VALUE = "<arg_value>"
ARG_VALUE_CLOSE = "</arg_value>"
ASSISTANT = "<|assistant|>"
EOS = "</s>"
GMASK = "[gMASK]"
MASK = "[MASK]"
OBSERVATION = "<|observation|>"
SMASK = "[sMASK]"
SOP = "<sop>"
SYSTEM = "<|system|>"
THINK = "<think>"
THINK_CLOSE = "</think>"
TOOL_CALL = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
TOOL_RESPONSE = "<tool_response>"
TOOL_RESPONSE_CLOSE = "</tool_response>"
USER = "<|user|>"

#: GLM-4.5 / 4.6 / 4.7: ``<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value>…</tool_call>``.
GLM45_FORMAT = ToolCallFormat(
    "glm45",
    "xml_pairs",
    call_begin=TOOL_CALL,
    call_end=TOOL_CALL_CLOSE,
    key_open=ARG_KEY,
    key_close=ARG_KEY_CLOSE,
    value_open=ARG_VALUE,
    value_close=ARG_VALUE_CLOSE,
)

#: GLM-4: ``NAME\n{…}`` with no marker; another call follows ``<|assistant|>``.
GLM4_FORMAT = ToolCallFormat("glm4", "json_arguments", name_sep="\n", separator=ASSISTANT)
#: ChatGLM3: ``NAME`` then a ``python`` fence around ``tool_call(k=v, …)``; another call follows
#: ``<|assistant|>``.
CHATGLM3_FORMAT = ToolCallFormat(
    "chatglm3",
    "pythonic",
    name_sep="\n ```python\ntool_call(",
    call_end=")\n```",
    separator=ASSISTANT,
)
