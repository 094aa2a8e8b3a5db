"""Minimal relays for the gateway benchmark's floor: what one more hop costs on this machine.

``python benchmarks/_relay.py MODE PORT ENGINE_URL`` serves on 127.0.0.1:PORT and passes
each request to the engine (``ENGINE_URL``: its ``…/v1`` root), its answer's bytes back as
they come, doing nothing else (no parsing, no validation, no rendering):

- ``tcp``: a byte pipe (asyncio streams on uvloop): per client connection one engine
  connection, bytes copied both ways. The floor of any relay: one more process that reads
  and writes each piece once.
- ``http``: the stack ``chatfmt serve`` runs on — uvicorn (httptools, uvloop) with a bare
  ASGI application and a pooled aiohttp client to the engine — passing the request body
  and each piece of the streamed answer through unchanged. The floor of a gateway built on
  that stack.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any
from urllib.parse import urlsplit


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while piece := await reader.read(65536):
            writer.write(piece)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


def serve_tcp(port: int, engine: str) -> None:
    """The byte pipe (blocks)."""
    import uvloop

    target = urlsplit(engine)

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(target.hostname, target.port)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def main() -> None:
        server = await asyncio.start_server(client, "127.0.0.1", port, backlog=2048)
        async with server:
            await server.serve_forever()

    uvloop.run(main())


def serve_http(port: int, engine: str) -> None:
    """The bare ASGI relay on uvicorn (blocks)."""
    import aiohttp
    import uvicorn

    session: list[aiohttp.ClientSession] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            if session:
                await session[0].close()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if not session:
            session.append(aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1024)))
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        url = engine + scope["path"].removeprefix("/v1")
        headers = {"Content-Type": "application/json"}
        async with session[0].post(url, data=body, headers=headers) as resp:
            await send(
                {
                    "type": "http.response.start",
                    "status": resp.status,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            async for piece in resp.content.iter_any():
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", backlog=2048)


if __name__ == "__main__":
    mode, port_arg, engine_url = sys.argv[1:4]
    (serve_tcp if mode == "tcp" else serve_http)(int(port_arg), engine_url.rstrip("/"))
