"""Results cached per template object (dropped with it) and a request key, errors included."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ChatFmtError

T = TypeVar("T")


def per_template(
    store: weakref.WeakKeyDictionary[Any, dict[str, Any]],
    template: Any,
    key: str,
    build: Callable[[], T],
    *,
    limit: int = 512,
) -> T:
    """``build()`` once per ``(template, key)``; a :class:`ChatFmtError` it raises is cached
    and raised again. A template that cannot be weakly referenced is not cached."""
    try:
        cache = store.setdefault(template, {})
    except TypeError:
        cache = {}
    if key in cache:
        found = cache[key]
    else:
        if len(cache) >= limit:
            cache.clear()
        try:
            found = build()
        except ChatFmtError as exc:
            found = exc
        cache[key] = found
    if isinstance(found, ChatFmtError):
        raise found
    result: T = found
    return result
