"""``chatfmt.__all__`` is exactly the public API documented in docs/api.md."""

from __future__ import annotations

import re
import types

import chatfmt

from _support import ROOT

#: A documented name: a table row whose first column is the name in backticks.
_ROW = re.compile(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", re.M)


def _documented() -> list[str]:
    return _ROW.findall((ROOT / "docs" / "api.md").read_text(encoding="utf-8"))


def test_all_is_the_documented_api() -> None:
    documented = _documented()
    assert len(documented) == len(set(documented)), "a name is documented twice"
    assert len(chatfmt.__all__) == len(set(chatfmt.__all__)), "a name is in __all__ twice"
    assert set(chatfmt.__all__) == set(documented)


def test_every_exported_name_is_importable() -> None:
    namespace: dict[str, object] = {}
    exec("from chatfmt import *", namespace)  # resolves the lazy token-level names too
    missing = [name for name in chatfmt.__all__ if name not in namespace]
    assert not missing


def test_no_public_name_outside_all() -> None:
    public = {
        name
        for name in dir(chatfmt)
        if not name.startswith("_") and not isinstance(getattr(chatfmt, name), types.ModuleType)
    }
    assert public - set(chatfmt.__all__) == set()
