"""JSON for the streaming hot paths: orjson when it is installed (the ``serve`` extra),
else the standard library, with the same results either way.

Used where a gateway stream decodes and encodes every event (the completions client, the
chat APIs' events): orjson does it ≈ 5× (decode) and ≈ 15× (encode) faster, measured in
``benchmarks/profile_gateway.py`` (see ``docs/performance.md``). What orjson refuses
(a lone surrogate, an integer beyond 64 bits, a key that is not a string) takes the
standard library's path.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - the serve extra installs it
    orjson = None  # type: ignore[assignment]

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_ascii = json.JSONEncoder(separators=(",", ":")).encode


def loads(data: bytes | str) -> Any:
    """``data`` decoded (``ValueError`` if it is not JSON)."""
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # invalid, or valid JSON orjson declines (a lone surrogate escape)
    return json.loads(data)


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (a lone surrogate escaped, as ``\\udXXX``)."""
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    try:
        return _encode(value).encode()
    except UnicodeEncodeError:
        return _encode_ascii(value).encode()
