"""gigachat: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BOS = "<s>"
EOS = "</s>"
FUNCTION_CALL = "<|function_call|>"
MESSAGE_SEP = "<|message_sep|>"
ROLE_SEP = "<|role_sep|>"

#: GigaChat 3: a ``function call`` turn holding one JSON call object.
GIGACHAT3_FORMAT = ToolCallFormat(
    "gigachat3", "json_call", call_begin=MESSAGE_SEP + "\n\nfunction call" + ROLE_SEP
)
#: GigaChat 3.1: ``<|function_call|>{"name": …, "arguments": …}``.
GIGACHAT31_FORMAT = ToolCallFormat("gigachat3.1", "json_call", call_begin=FUNCTION_CALL)
