"""What a chat format leaves out of the history by its own rules, declared per template.

Some formats never show the model parts of a conversation again: Qwen3 drops the reasoning
of turns before the last user message, Harmony (gpt-oss) keeps the analysis of a pending
tool call only, DeepSeek V3 writes tool calls but has no section for tool definitions.
These are rules of the formats (their official templates do it), not losses of chatfmt's:
each template declares them once as :class:`HistoryRules` (``Template.history``), shown by
``chatfmt show NAME`` and ``Template.info()``. :meth:`HistoryRules.drops` lists what a given
conversation loses by them; ``lossless=True`` on a render raises
:class:`~chatfmt.errors.UnsupportedFeatureError` naming the first such message and field
instead of leaving it out (docs/rendering.md, *What a format leaves out*).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .protocol import Conversation, Message


class Shown(enum.Enum):
    """Which assistant replies keep a part (their reasoning) when the history is rendered."""

    #: Every reply (the part is written, or the render refuses it).
    ALL = "all"
    #: Replies after the last user message; earlier turns lose it (Qwen3, DeepSeek R1…).
    AFTER_LAST_USER = "after_last_user"
    #: Replies with tool calls after the last user message (Gemma 4: thinking between calls).
    CALLS_AFTER_LAST_USER = "calls_after_last_user"
    #: Replies after the last assistant reply without tool calls (Kimi-K2-Thinking: the
    #: agentic turn in progress).
    AFTER_LAST_ANSWER = "after_last_answer"
    #: Harmony (gpt-oss): a tool call not yet followed by a final answer, and a final answer
    #: that ends a conversation rendered without a generation prompt (training).
    PENDING_CALL = "pending_call"

    def shows(self, messages: Sequence[Message], at: int, add_generation_prompt: bool) -> bool:
        """Whether the reply at position ``at`` of ``messages`` keeps the part."""
        if self is Shown.ALL:
            return True
        m = messages[at]
        if self is Shown.AFTER_LAST_USER:
            return at > _last(messages, lambda x: x.role == "user")
        if self is Shown.CALLS_AFTER_LAST_USER:
            return bool(m.tool_calls) and at > _last(messages, lambda x: x.role == "user")
        if self is Shown.AFTER_LAST_ANSWER:
            return at > _last(messages, lambda x: x.role == "assistant" and not x.tool_calls)
        # PENDING_CALL
        if m.tool_calls:
            return not any(x.role == "assistant" and not x.tool_calls for x in messages[at + 1 :])
        return at == len(messages) - 1 and not add_generation_prompt


def _last(messages: Sequence[Message], match: Any) -> int:
    """Position of the last message that ``match`` accepts (``-1`` when none does)."""
    for at in range(len(messages) - 1, -1, -1):
        if match(messages[at]):
            return at
    return -1


@dataclass(frozen=True)
class Drop:
    """One piece of a conversation the format's rules leave out of the render."""

    #: Message index (as the caller gave it), or ``None`` for the tool definitions.
    index: int | None
    #: ``"reasoning_content"``, ``"content"`` (its ``<think>…</think>`` part) or ``"tools"``.
    field: str
    #: The rule, in words.
    reason: str


@dataclass(frozen=True)
class HistoryRules:
    """What a format leaves out of the history by its own rules (see module doc).

    ``reasoning``: which replies keep their ``reasoning_content``. ``think_in_content``:
    which replies keep reasoning written into their content as ``<think>…</think>`` (the
    format cuts the rest at ``</think>``). ``tool_definitions``: whether the format has a
    section for tool definitions (``tools=``); a template without tool support has none.
    ``kept_by``: a template option and the value that keeps every reply's reasoning
    (GLM-4.7's ``clear_thinking=False``, LFM2.5-8B-A1B's ``preserve_thinking=True``).
    """

    reasoning: Shown = Shown.ALL
    think_in_content: Shown = Shown.ALL
    tool_definitions: bool = True
    kept_by: tuple[str, Any] | None = None

    def drops(
        self,
        conv: Conversation,
        *,
        add_generation_prompt: bool = True,
        options: Mapping[str, Any] | None = None,
        supports_tools: bool = True,
    ) -> list[Drop]:
        """What rendering ``conv`` leaves out by these rules, in message order (tools last)."""
        out: list[Drop] = []
        kept = self.kept_by is not None and (options or {}).get(self.kept_by[0]) == self.kept_by[1]
        messages = conv.messages
        for at, m in enumerate(messages):
            if m.role != "assistant" or kept:
                continue
            if m.reasoning_content and not self.reasoning.shows(
                messages, at, add_generation_prompt
            ):
                out.append(Drop(m.index, "reasoning_content", _REASONS[self.reasoning]))
            if (
                m.content
                and "</think>" in m.content
                and not self.think_in_content.shows(messages, at, add_generation_prompt)
            ):
                out.append(Drop(m.index, "content", _REASONS[self.think_in_content]))
        if conv.tools and not (supports_tools and self.tool_definitions):
            out.append(Drop(None, "tools", "the format has no section for tool definitions"))
        return out

    def summary(self, supports_tools: bool = True) -> str:
        """One line for the template catalogue (``chatfmt templates --markdown``)."""
        parts = []
        if self.reasoning is not Shown.ALL:
            parts.append(f"reasoning shown: {self.reasoning.value}")
        if self.think_in_content is not Shown.ALL:
            parts.append(f"<think> in content: {self.think_in_content.value}")
        if supports_tools and not self.tool_definitions:
            parts.append("no tool definitions")
        if parts and self.kept_by is not None:
            parts.append(f"kept with {self.kept_by[0]}={self.kept_by[1]}")
        return "; ".join(parts) or "—"

    def to_dict(self, supports_tools: bool = True) -> dict[str, Any]:
        """A JSON-friendly form (``Template.info()``, ``chatfmt show``)."""
        return {
            "reasoning_shown": self.reasoning.value,
            "think_in_content_shown": self.think_in_content.value,
            "tool_definitions": supports_tools and self.tool_definitions,
            "kept_by": None if self.kept_by is None else {self.kept_by[0]: self.kept_by[1]},
        }


_REASONS = {
    Shown.ALL: "",
    Shown.AFTER_LAST_USER: "the format drops the reasoning of turns before the last user message",
    Shown.CALLS_AFTER_LAST_USER: (
        "the format keeps reasoning only for replies with tool calls after the last user message"
    ),
    Shown.AFTER_LAST_ANSWER: (
        "the format drops the reasoning of every reply up to the last answer without tool calls"
    ),
    Shown.PENDING_CALL: (
        "the format (Harmony) keeps the analysis of a pending tool call only (and of a final "
        "answer that ends a conversation rendered without a generation prompt)"
    ),
}

#: The rules of a format that shows every reply's reasoning and has tool definitions.
KEEPS_ALL = HistoryRules()
#: Official formats that drop the ``reasoning_content`` of turns before the last user message.
EARLIER_REASONING_DROPPED = HistoryRules(Shown.AFTER_LAST_USER)
#: The same, and they also cut reasoning written into those turns' content as
#: ``<think>…</think>`` (Qwen3, QwQ, GLM-4.5, the DeepSeek R1 distills…).
EARLIER_THINKING_DROPPED = HistoryRules(Shown.AFTER_LAST_USER, Shown.AFTER_LAST_USER)

__all__ = [
    "EARLIER_REASONING_DROPPED",
    "EARLIER_THINKING_DROPPED",
    "KEEPS_ALL",
    "Drop",
    "HistoryRules",
    "Shown",
]
