"""DeepSeek V3.2 / V4 DSML tool calls: the shared ``<invoke>`` machine with ``｜DSML｜`` tags."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...parsing.invoke import Invoke, InvokeParser, _declares_type
from ...parsing.json_stream import loads_or_none
from ...parsing.states import State
from ...parsing.xml_values import typed_value

# ---------------------------------------------------------------------- DeepSeek DSML
_DSML = "｜DSML｜"
_FC, _FC_END = f"<{_DSML}function_calls>", f"</{_DSML}function_calls>"
_TC, _TC_END = f"<{_DSML}tool_calls>", f"</{_DSML}tool_calls>"


class DeepSeekDSMLParser(InvokeParser):
    """DeepSeek V3.2 (``function_calls``) and V4 (``tool_calls``) DSML blocks.

    ``string="true"`` values are text, ``string="false"`` values JSON; a type the
    tool schema declares wins over the attribute (as the model's own prompt asks
    for schema-conforming values).
    """

    name = "deepseek_v32"
    starts: ClassVar[Mapping[str, State]] = {_FC: Invoke.CALLS, _TC: Invoke.CALLS}
    ends: ClassVar[Mapping[str, str | None]] = {_FC: _FC_END, _TC: _TC_END}
    invoke_open = f"<{_DSML}invoke"
    invoke_close = f"</{_DSML}invoke>"
    param_open = f"<{_DSML}parameter"
    param_close = f"</{_DSML}parameter>"

    def decode(self, text: str, attrs: Mapping[str, str], schema: Any) -> Any:
        if _declares_type(schema):
            return typed_value(text, schema)
        if attrs.get("string", "").strip().lower() == "false":
            ok, value = loads_or_none(text.strip())
            if ok:
                return value
        return text
