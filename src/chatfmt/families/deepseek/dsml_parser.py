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


_INVOKE = f"<{_DSML}invoke"


class DeepSeekDSMLParser(InvokeParser):
    """DeepSeek V3.2 (``function_calls``) and V4 (``tool_calls``) DSML blocks.

    ``string="true"`` values are text, ``string="false"`` values JSON; a type the
    tool schema declares wins over the attribute (as the model's own prompt asks
    for schema-conforming values).

    An invoke without the wrapper's opening tag (DeepSeek V4 drops it at long context,
    vLLM issue 48931) is read as a call too; after it, either wrapper's closing tag is
    markup and other text is content again.
    """

    name = "deepseek_v32"
    starts: ClassVar[Mapping[str, State]] = {
        _FC: Invoke.CALLS,
        _TC: Invoke.CALLS,
        _INVOKE: Invoke.HEAD,
    }
    ends: ClassVar[Mapping[str, str | None]] = {_FC: _FC_END, _TC: _TC_END, _INVOKE: _TC_END}
    invoke_open = _INVOKE
    invoke_close = f"</{_DSML}invoke>"
    param_open = f"<{_DSML}parameter"
    param_close = f"</{_DSML}parameter>"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unwrapped = False  # in invokes that came without the wrapper's opening tag

    def enter(self, marker: str) -> None:
        super().enter(marker)
        self._unwrapped = marker == _INVOKE

    def _s_calls(self) -> bool:
        if not self._unwrapped:
            return super()._s_calls()
        start = self.pos
        if (done := self.skip_gap()) is not None:
            return done
        found = self.at_any(_TC_END, _FC_END, self.invoke_open)
        if found is None:
            self.pos = start
            return False
        if found == self.invoke_open:
            self.state = Invoke.HEAD
            return True
        if not found:
            self.pos = start  # no wrapper: the text (and the whitespace before it) is content
        self.end_block()
        return True

    def decode(self, text: str, attrs: Mapping[str, str], schema: Any) -> Any:
        if _declares_type(schema):
            return typed_value(text, schema)
        if attrs.get("string", "").strip().lower() == "false":
            ok, value = loads_or_none(text.strip())
            if ok:
                return value
        return text
