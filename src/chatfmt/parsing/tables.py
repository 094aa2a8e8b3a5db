"""Parser tables by name, filled from the family table (:data:`chatfmt.families.FAMILIES`).

A table reads every family's parsers on its first lookup (so importing
:mod:`chatfmt.parsing` imports no family) and refuses a name or alias that another
parser already has, whatever the order families or user code add them in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

from ..errors import ChatFmtError

P = TypeVar("P", bound=Callable[..., Any])


class ParserTable(MutableMapping[str, P], Generic[P]):
    """Parsers by name and alias (one namespace), loaded from the families on first use.

    ``kind`` is ``"tool"`` or ``"reasoning"``; ``builtins`` adds the shared parsers that
    belong to no family (e.g. ``plain``, ``think``) as ``(parser, aliases)`` pairs.
    """

    def __init__(self, kind: str, builtins: Callable[[], list[tuple[P, tuple[str, ...]]]]) -> None:
        self.kind = kind
        self._builtins = builtins
        self._by_name: dict[str, P] = {}
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from ..families import builtin_parsers

        try:
            for parser, aliases in [*self._builtins(), *builtin_parsers(self.kind)]:
                self._add(parser, aliases)
        except BaseException:
            # A broken family fails every lookup loudly, never half a table.
            self._by_name.clear()
            self._loaded = False
            raise

    def add(self, parser: P, *aliases: str) -> P:
        """Add ``parser`` under its ``name`` and ``aliases``; a name another parser has is an error."""
        self._load()
        return self._add(parser, aliases)

    def _add(self, parser: P, aliases: tuple[str, ...]) -> P:
        keys = (getattr(parser, "name", ""), *aliases)
        if not keys[0]:
            raise ChatFmtError(f"a {self.kind} parser needs a name")
        for key in keys:
            other = self._by_name.get(key)
            if other is not None and other is not parser:
                raise ChatFmtError(
                    f"{self.kind} parser name {key!r} is taken by "
                    f"{getattr(other, '__name__', repr(other))}"
                )
        for key in keys:
            self._by_name[key] = parser
        return parser

    def __getitem__(self, name: str) -> P:
        self._load()
        return self._by_name[name]

    def __setitem__(self, name: str, parser: P) -> None:
        self._load()
        self._by_name[name] = parser

    def __delitem__(self, name: str) -> None:
        self._load()
        del self._by_name[name]

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._by_name

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(self._by_name)

    def __len__(self) -> int:
        self._load()
        return len(self._by_name)

    def __repr__(self) -> str:
        return f"<{self.kind} parsers: {', '.join(sorted(self))}>"
