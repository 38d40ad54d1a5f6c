"""Relays an upgraded client connection (a ``101 Switching Protocols`` already sent) and a
stream into the sandbox, byte for byte, both ways: tunnels and WebSockets through preview URLs.

The client's transport is taken from aiohttp's HTTP protocol (``transport.set_protocol``) for
the rest of the connection, for two reasons aiohttp's own upgrade seam (``set_parser``, used by
``WebSocketResponse``) cannot serve: aiohttp closes a connection as soon as the client
half-closes it (``eof_received`` returns nothing), while a raw stream must still carry the
answer that a half-close asks for; and its parser seam has no flow control, so a client that
sends faster than the sandbox reads would be buffered without bound. Here the client's reads
pause while more than ``HIGH_WATER`` bytes wait for the sandbox, and the sandbox's reads wait
while the client's socket buffer is full. aiohttp's protocol still sees the connection end
(``connection_lost`` is passed on), so its server shutdown accounts for it.

Endings: the sandbox's side ending (EOF or error) closes the client's connection once what it
sent has been flushed; the client half-closing passes the EOF on and keeps reading the
sandbox; the client's connection dropping ends the relay.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

from aiohttp import web

__all__ = [
    "HIGH_WATER",
    "READ_SIZE",
    "ClientEnd",
    "SandboxEnd",
    "relay",
    "switch_protocols",
    "take_over",
]

#: Bytes read from the sandbox at a time (the size asyncio's transports read too).
READ_SIZE = 256 * 1024
#: Client bytes waiting for the sandbox beyond which the client's socket is no longer read.
HIGH_WATER = 1024 * 1024


class SandboxEnd(Protocol):
    """The connection into the sandbox, as the relay uses it."""

    async def read(self, max_bytes: int) -> bytes: ...

    async def write(self, data: bytes) -> None: ...

    def write_eof(self) -> None: ...


async def relay(client: ClientEnd, sandbox: SandboxEnd) -> None:
    """Relay until one of the endings in the module's docstring; the client's connection is
    closed on return (the caller closes the sandbox's)."""
    tasks = [
        asyncio.ensure_future(_inbound(client, sandbox)),
        asyncio.ensure_future(_outbound(client, sandbox)),
    ]
    try:
        await asyncio.wait([tasks[1], client.lost], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        client.transport.close()  # flushes what is buffered, then closes


def take_over(request: web.Request) -> ClientEnd | None:
    """The client's connection, taken from aiohttp (``None`` if it already closed). Call it
    before sending the ``101``: a client may send as soon as it reads the head, and bytes
    aiohttp's protocol received would go to its HTTP parser (which treats only ``websocket``
    as an upgrade) and be lost."""
    transport = request.transport
    if transport is None or transport.is_closing():
        return None
    client = ClientEnd(transport, request.protocol)
    # Bytes read past the head before the takeover come through aiohttp's upgrade seam.
    request.protocol.set_parser(_Tail(client))  # type: ignore[arg-type]
    transport.set_protocol(client)
    return client


def switch_protocols(request: web.Request) -> tuple[web.StreamResponse, ClientEnd | None]:
    """The ``101`` answering the request's ``Upgrade`` (not sent yet) and the client's end,
    taken over first (``take_over``)."""
    response = web.StreamResponse(
        status=101, headers={"Connection": "Upgrade", "Upgrade": request.headers["Upgrade"]}
    )
    return response, take_over(request)


async def _inbound(client: ClientEnd, sandbox: SandboxEnd) -> None:
    """Client to sandbox; the client's EOF becomes the sandbox's."""
    while True:
        data = await client.take()
        if not data:
            with contextlib.suppress(OSError):
                sandbox.write_eof()
            return
        await sandbox.write(data)


async def _outbound(client: ClientEnd, sandbox: SandboxEnd) -> None:
    """Sandbox to client, waiting while the client's socket buffer is full."""
    while data := await sandbox.read(READ_SIZE):
        client.transport.write(data)
        await client.writable()


class ClientEnd(asyncio.Protocol):
    """The client's connection after the upgrade: buffered input with flow control, EOF kept
    half-open, and its end passed on to aiohttp's protocol."""

    def __init__(self, transport: asyncio.BaseTransport, previous: asyncio.BaseProtocol) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._previous = previous
        self._chunks: list[bytes] = []
        self._size = 0
        self._eof = False
        self._paused_reading = False
        self._wake: asyncio.Future[None] | None = None
        self._can_write: asyncio.Future[None] | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._held = False
        self._lost_with: list[Exception | None] = []

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        if self._size > HIGH_WATER and not self._paused_reading:
            self._paused_reading = True
            self.transport.pause_reading()
        self._wakeup()

    def eof_received(self) -> bool:
        self._eof = True
        self._wakeup()
        return True  # keep the connection open for the sandbox's answer

    def connection_lost(self, exc: Exception | None) -> None:
        if self._held:  # the socket lives on in other hands: aiohttp hears of it on release
            self._lost_with.append(exc)
            return
        self._eof = True
        self._wakeup()
        if not self.lost.done():
            self.lost.set_result(None)
        if self._can_write is not None and not self._can_write.done():
            self._can_write.set_result(None)
        self._previous.connection_lost(exc)

    async def flushed(self) -> None:
        """Until everything written so far has gone to the socket."""
        self.transport.set_write_buffer_limits(high=0)
        await self.writable()

    def hand_over(self) -> bytes:
        """What the client sent so far; from now on the connection's end reaches aiohttp only
        through ``release`` (its handler would be cancelled otherwise)."""
        self._held = True
        data = b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        return data

    def release(self) -> None:
        """Tell aiohttp the connection ended, once whoever took it over is done."""
        self._held = False
        if self._lost_with:
            self.connection_lost(self._lost_with.pop())

    def pause_writing(self) -> None:
        if self._can_write is None or self._can_write.done():
            self._can_write = asyncio.get_running_loop().create_future()
        self._previous.pause_writing()  # aiohttp's own writer (the 101 head) waits on it

    def resume_writing(self) -> None:
        if self._can_write is not None and not self._can_write.done():
            self._can_write.set_result(None)
        self._previous.resume_writing()

    async def writable(self) -> None:
        if self._can_write is not None and not self._can_write.done():
            await self._can_write

    async def take(self) -> bytes:
        """Everything the client has sent so far; ``b""`` once it sent EOF."""
        while not self._chunks:
            if self._eof:
                return b""
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake
        data = b"".join(self._chunks) if len(self._chunks) > 1 else self._chunks[0]
        self._chunks.clear()
        self._size = 0
        if self._paused_reading and not self.transport.is_closing():
            self._paused_reading = False
            self.transport.resume_reading()
        return data

    def _wakeup(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)


class _Tail:
    """aiohttp's payload-parser seam, used once: hands over what was read past the head."""

    def __init__(self, client: ClientEnd) -> None:
        self._client = client

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self._client.data_received(data)
        return False, b""

    def feed_eof(self) -> None:
        self._client.eof_received()
