"""The whitespace a template writes itself around an assistant's text, found by probing.

A template writes some whitespace of an assistant turn on its own: before the text (Reka's
``assistant:`` then a space) and between the text and the first tool call (Qwen2.5's newline before ``<tool_call>``, DeepSeek V4's two). A
model prompted with the template writes that whitespace too. The parser leaves it out of
``content`` (see :class:`~.base.Emitter`), so that the parsed message, rendered back as
history, is byte for byte what the model wrote: the template writes the whitespace again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ChatFmtError

#: JSON's whitespace (the same as :data:`.base.WS`).
_WS = " \t\r\n"
_TEXT = "chatfmt probe text"
_TOOL = "chatfmt_probe_tool"
_PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": _TOOL,
            "description": "A probe.",
            "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
        },
    }
]
_PROBE_ID = "call00000"  # 9 alphanumerics: valid for Mistral too
_PROBE_CALL = {
    "id": _PROBE_ID,
    "type": "function",
    "function": {"name": _TOOL, "arguments": '{"a": "b"}'},
}


@dataclass(frozen=True, slots=True)
class Separators:
    """The whitespace a template writes on its own in an assistant turn (``""``: none)."""

    #: Before the text, after the generation prompt (the prompt's own whitespace excluded;
    #: after a reasoning block no whitespace is content, as other parsers read it).
    before_content: str = ""
    #: Between text that ends in other than a newline and the first tool call.
    before_calls: str = ""
    #: Between text that ends in a newline and the first tool call (Reka writes none then).
    before_calls_after_newline: str = ""
    #: Whether the template writes a call's id back (Mistral's): then a parser keeps the id
    #: the model wrote, also one that comes after the arguments (see ``BlockParser.id_keys``).
    call_ids: bool = True

    def content_before_calls(self, held: str) -> str:
        """What of the whitespace ``held`` between the text and the first call is content.

        The part the template would not write itself: ``held`` less the separator the
        template writes after the text that remains (all of ``held`` when no split fits).
        """
        for sep, wants_newline in (
            (self.before_calls_after_newline, True),
            (self.before_calls, False),
        ):
            if held.endswith(sep):
                rest = held[: len(held) - len(sep)]
                if rest.endswith("\n") == wants_newline:
                    return rest
        return held


NONE = Separators()


def probe_separators(tpl: Any, options: Mapping[str, Any]) -> Separators:
    """The :class:`Separators` of template ``tpl`` rendered with template ``options``."""
    if tpl is None:
        return NONE
    history = [{"role": "user", "content": "x"}]

    def render(turn: dict[str, Any] | None, **kw: Any) -> str | None:
        try:
            return str(
                tpl.render(
                    history if turn is None else [*history, turn],
                    add_generation_prompt=turn is None,
                    **kw,
                    **options,
                )
            )
        except ChatFmtError:
            return None

    before = _before_text(render({"role": "assistant", "content": _TEXT}), render(None))
    calls = []
    ids = False
    for text in (_TEXT, _TEXT + "\n"):
        turn = {"role": "assistant", "content": text, "tool_calls": [_PROBE_CALL]}
        rendered = render(turn, tools=_PROBE_TOOLS)
        ids = ids or (rendered is not None and _PROBE_ID in rendered)
        calls.append(_after_text(rendered, text))
    after_newline = calls[1][1:] if calls[1].startswith("\n") else calls[0]
    return Separators(before, calls[0], after_newline, ids)


def _before_text(rendered: str | None, prompt: str | None) -> str:
    """The whitespace right before the probe text in ``rendered``, less the prompt's own.

    (Where the turn writes a reasoning block first, that is the whitespace after it; the
    reasoning parser reads none of it as content, so the emitter never sees it.)
    """
    if rendered is None:
        return ""
    at = rendered.rfind(_TEXT)
    if at < 0:
        return ""
    start = len(rendered[:at].rstrip(_WS))
    if prompt is not None:  # whitespace of the generation prompt is not the model's
        shared = next(
            (k for k, (a, b) in enumerate(zip(prompt, rendered)) if a != b),
            min(len(prompt), len(rendered)),
        )
        start = max(start, min(at, shared))
    return rendered[start:at]


def _after_text(rendered: str | None, text: str) -> str:
    """The whitespace between ``text`` and a following probe call in ``rendered``."""
    if rendered is None:
        return ""
    at = rendered.rfind(text.rstrip(_WS))
    if at < 0:
        return ""
    rest = rendered[at + len(text.rstrip(_WS)) :]
    if _TOOL not in rest:
        return ""  # the calls come first
    return rest[: len(rest) - len(rest.lstrip(_WS))]
