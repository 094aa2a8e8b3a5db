"""Reading the ``data`` of server-sent events from a streamed HTTP body.

Only the part of the SSE format that completion servers use: ``data:`` fields (several
lines of one event are joined with ``\\n``), comments (``:``), and a blank line ending an
event. Other fields (``event``, ``id``, ``retry``) are ignored.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator


async def sse_data(lines: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """The data of each event in a stream of body lines (as aiohttp's ``resp.content`` yields)."""
    data: list[str] = []
    async for raw in lines:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
