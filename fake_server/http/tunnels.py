"""``POST …/tunnel/{port}``: the connection becomes a raw byte stream to ``port`` inside the
sandbox (HTTP Upgrade; the reply is ``101 Switching Protocols``).

On the process runtime the stream goes to the sandbox's ``eth0`` through its network
namespace, as preview URLs do; nothing listening there is a 502 before the upgrade. Bashkit
sandboxes run no servers, so every tunnel into one is a 502.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.models.errors import ApiError, BadGateway, BadRequest
from fake_server.models.ingress import not_listening
from fake_server.runtime.api import FeatureUnavailable

__all__ = ["tunnel"]

_CHUNK = 1 << 20


async def tunnel(request: web.Request) -> web.StreamResponse:
    raw_port = request.match_info["port"]
    if not raw_port.isdigit():
        raise BadRequest("must be a port between 1 and 65535", field="port")
    port = int(raw_port)
    if not request.headers.get("Upgrade"):
        raise ApiError("expects an HTTP Upgrade", status=426, code="upgrade_required")
    sandbox = request[BACKEND_KEY].tunnel_target(sandbox_id(request), port)
    try:
        sock = await sandbox.machine.connect(port)
    except FeatureUnavailable as exc:
        raise BadGateway(str(exc)) from None
    except OSError:
        raise not_listening(port) from None
    reader, writer = await asyncio.open_connection(sock=sock)
    response = web.StreamResponse(
        status=101, headers={"Connection": "Upgrade", "Upgrade": request.headers["Upgrade"]}
    )
    await response.prepare(request)
    transport = request.transport
    assert transport is not None
    incoming = asyncio.StreamReader(limit=_CHUNK)
    # Every byte after the head, through the seam WebSocketResponse uses.
    request.protocol.set_parser(_Raw(incoming))  # type: ignore[arg-type]

    async def inbound() -> None:
        while data := await incoming.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()

    async def outbound() -> None:
        while data := await reader.read(_CHUNK):
            transport.write(data)

    tasks = [asyncio.ensure_future(inbound()), asyncio.ensure_future(outbound())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if tasks[0].done() and not tasks[1].done():
            await tasks[1]  # the client finished sending: the answer still comes back
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        writer.close()
        transport.close()
    return response


class _Raw:
    """aiohttp's payload parser seam: every byte the client sends after the upgrade."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self._reader.feed_data(data)
        return False, b""

    def feed_eof(self) -> None:
        self._reader.feed_eof()
