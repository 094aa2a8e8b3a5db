"""Reading the ``data`` of server-sent events from a streamed HTTP body.

Only the part of the SSE format that completion servers use: ``data:`` fields (several
lines of one event are joined with ``\\n``), comments (``:``), and a blank line ending an
event; lines may end with ``\\n``, ``\\r\\n`` or ``\\r``. Other fields (``event``, ``id``,
``retry``) are ignored.

The decoder works on the body's pieces as the network delivers them (not line by line):
one call per read, whatever number of events it holds. This is the hot loop of every
streamed request the gateway relays.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

_DATA = b"data: "


class SSEDecoder:
    """Splits body pieces into the ``data`` of complete events (as bytes)."""

    __slots__ = ("_rest",)

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, piece: bytes) -> list[bytes]:
        """The data of every event that ``piece`` completes."""
        buffer = self._rest + piece if self._rest else piece
        if b"\r" in buffer:
            # a trailing \r may be the first half of \r\n: kept until the next piece
            held = buffer.endswith(b"\r")
            body = buffer[:-1] if held else buffer
            buffer = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
        blocks = buffer.split(b"\n\n")
        self._rest = blocks.pop()
        out: list[bytes] = []
        for block in blocks:
            if block.startswith(_DATA) and b"\n" not in block:  # the usual one-line event
                out.append(block[6:])
            elif block:
                data = _data(block)
                if data is not None:
                    out.append(data)
        return out

    def close(self) -> list[bytes]:
        """The data of an event the body ended without a blank line after."""
        rest, self._rest = self._rest.rstrip(b"\r"), b""
        data = _data(rest) if rest else None
        return [data] if data is not None else []


def _data(block: bytes) -> bytes | None:
    """The data of one event's lines (``None`` if it has no ``data`` field)."""
    parts: list[bytes] = []
    for line in block.split(b"\n"):
        if not line or line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        if name == b"data":
            parts.append(value[1:] if value.startswith(b" ") else value)
    return b"\n".join(parts) if parts else None


async def sse_data(pieces: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """The data of each event in a body read piece by piece (e.g. aiohttp's
    ``resp.content.iter_any()``)."""
    decoder = SSEDecoder()
    async for piece in pieces:
        for data in decoder.feed(piece):
            yield data
    for data in decoder.close():
        yield data
