"""The in-memory store of responses behind ``previous_response_id`` (``POST /v1/responses``).

Each stored response keeps its response object (for ``GET /v1/responses/{id}``) and the
conversation it continues, as chat messages: its own input and reply, and a link to the
response it continued. The store is bounded (``max_entries``, the oldest go first) and
entries expire ``ttl`` seconds after they were stored; it lives in one process, so with
``--workers N`` or several gateways a follow-up must reach the same process (else its
``previous_response_id`` is not found: send the whole input instead, with ``store: false``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StoredResponse:
    """One stored response: its object, and the messages of its turn (input, then reply)."""

    resource: dict[str, Any]
    #: This turn's messages in chat form (without ``instructions``): the request's input
    #: items, then the reply's output items, translated.
    messages: tuple[dict[str, Any], ...]
    #: The stored response this one continued (``previous_response_id``), if any.
    parent: StoredResponse | None = None

    def conversation(self) -> list[dict[str, Any]]:
        """Every message up to and including this reply, oldest first."""
        turns: list[tuple[dict[str, Any], ...]] = []
        node: StoredResponse | None = self
        while node is not None:
            turns.append(node.messages)
            node = node.parent
        return [message for turn in reversed(turns) for message in turn]


class ResponseStore:
    """Responses by id: at most ``max_entries``, each kept ``ttl`` seconds."""

    def __init__(
        self,
        max_entries: int = 1024,
        ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0 or ttl <= 0:
            raise ValueError("a response store needs max_entries >= 0 and ttl > 0")
        self.max_entries = max_entries
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, StoredResponse]] = OrderedDict()

    def __len__(self) -> int:
        self._expire()
        return len(self._entries)

    def put(self, response_id: str, stored: StoredResponse) -> None:
        """Keep ``stored`` under ``response_id`` (dropping the oldest beyond the bound)."""
        if self.max_entries == 0:
            return
        self._expire()
        self._entries[response_id] = (self._clock() + self.ttl, stored)
        self._entries.move_to_end(response_id)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def get(self, response_id: str) -> StoredResponse | None:
        """The response stored under ``response_id`` (``None``: never, expired or evicted)."""
        self._expire()
        found = self._entries.get(response_id)
        return None if found is None else found[1]

    def delete(self, response_id: str) -> bool:
        """Forget ``response_id``; whether it was stored."""
        self._expire()
        return self._entries.pop(response_id, None) is not None

    def _expire(self) -> None:
        now = self._clock()
        entries = self._entries
        while entries:
            first = next(iter(entries))
            if entries[first][0] > now:
                break
            del entries[first]
