"""``POST …/tunnel/{port}``: the connection becomes a raw byte stream to ``port`` inside the
sandbox (HTTP Upgrade; the reply is ``101 Switching Protocols``).

On the process runtime the stream goes to the sandbox's ``eth0`` through its network
namespace, as preview URLs do; nothing listening there is a 502 before the upgrade. Bashkit
sandboxes run no servers, so every tunnel into one is a 502.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.http.relay import READ_SIZE, relay, take_over
from fake_server.models.errors import ApiError, BadGateway, BadRequest
from fake_server.models.ingress import not_listening
from fake_server.runtime.api import FeatureUnavailable

__all__ = ["tunnel"]


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
    reader, writer = await asyncio.open_connection(sock=sock, limit=READ_SIZE)
    response = web.StreamResponse(
        status=101, headers={"Connection": "Upgrade", "Upgrade": request.headers["Upgrade"]}
    )
    client = take_over(request)
    try:
        await response.prepare(request)
        if client is not None:
            await relay(client, _Socket(reader, writer))
    finally:
        writer.close()
        if client is not None:
            client.transport.close()
    return response


class _Socket:
    """The tunnel's connection into the sandbox (``relay.SandboxEnd``)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int) -> bytes:
        return await self._reader.read(max_bytes)

    async def write(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    def write_eof(self) -> None:
        self._writer.write_eof()
