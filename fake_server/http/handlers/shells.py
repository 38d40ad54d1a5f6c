"""The shell routes: a login shell on a PTY in the sandbox, over a WebSocket
(``GET …/shell-ws``) or an HTTP Upgrade to a raw byte stream (``POST …/shell``).

The shell is a managed PTY process (``/bin/bash -l``) on either runtime and the session is
``http.streams.shell_session``'s; the frame formats are in
``http.streams.shell_frames``. Auth, the owner check and the sandbox's state are checked
before the upgrade, so a bad key is 401, a foreign or unknown sandbox 404 and a paused one 409,
as on the REST routes.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from aiohttp import WSMsgType, web

from fake_server.http.keys import BACKEND_KEY, WORLD_KEY, sandbox_id
from fake_server.http.streams.relay import switch_protocols
from fake_server.http.streams.shell_frames import RawFrames, Resize, decode_text, exit_frame
from fake_server.http.streams.shell_session import (
    IDLE_SECONDS,
    MAX_FRAME,
    MAX_PENDING_INPUT,
    run_session,
)
from fake_server.http.wire.common import query_int
from fake_server.models import ApiError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fake_server.clock import Clock
    from fake_server.http.streams.relay import ClientEnd
    from fake_server.models import Account, Process

__all__ = ["IDLE_SECONDS", "MAX_FRAME", "MAX_PENDING_INPUT", "relay_shell", "shell", "shell_ws"]


async def shell_ws(request: web.Request) -> web.StreamResponse:
    ws = web.WebSocketResponse(max_msg_size=MAX_FRAME, autoping=True)
    if not ws.can_prepare(request).ok:
        raise ApiError("expects a WebSocket upgrade", status=426, code="upgrade_required")
    backend, box = request[BACKEND_KEY], sandbox_id(request)
    opened = backend.processes.open_shell(
        box, query_int(request, "rows", 24), query_int(request, "cols", 80)
    )
    await ws.prepare(request)
    await relay_shell(ws, backend, box, opened, request.app[WORLD_KEY].ctx.clock)
    return ws


async def relay_shell(
    ws: web.WebSocketResponse, backend: Account, box: str, shell: Process, clock: Clock
) -> None:
    """Relay a prepared socket and an open shell both ways until either ends; the shell is
    killed if it is still running then (the dashboard's terminal uses this too)."""
    await run_session(_WebSocket(ws), backend, box, shell, clock)


async def shell(request: web.Request) -> web.StreamResponse:
    """``POST …/shell``: the same shell over an HTTP Upgrade (``101``), the official CLI's
    ``createos sandbox shell``; input in ``RawFrames``, output as the PTY's raw bytes."""
    if not request.headers.get("Upgrade"):
        raise ApiError("expects an HTTP Upgrade", status=426, code="upgrade_required")
    backend, box = request[BACKEND_KEY], sandbox_id(request)
    opened = backend.processes.open_shell(
        box, query_int(request, "rows", 24), query_int(request, "cols", 80)
    )
    clock = request.app[WORLD_KEY].ctx.clock
    response, client = switch_protocols(request)
    try:
        await response.prepare(request)
        if client is not None:
            await run_session(_Raw(client), backend, box, opened, clock)
    finally:
        if not opened.tree_exited:
            opened.crash("SIGKILL")
        if client is not None:
            client.transport.close()
    return response


class _WebSocket:
    """``…/shell-ws``'s channel: binary frames for terminal bytes, JSON text for control."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self._ws = ws

    async def incoming(self) -> AsyncIterator[bytes | Resize]:
        async for message in self._ws:
            if message.type == WSMsgType.BINARY:
                yield message.data
            elif message.type == WSMsgType.TEXT:
                yield decode_text(message.data)
            else:
                return  # an error frame or a close: the shell ends with the connection

    async def send(self, data: bytes) -> None:
        await self._ws.send_bytes(data)

    async def exited(self, exit_code: int | None, signal: str | None) -> str:
        text, reason = exit_frame(exit_code, signal)
        await self._ws.send_str(text)
        return reason

    async def close(self, code: int, reason: str) -> None:
        if not self._ws.closed:
            await self._ws.close(code=code, message=reason.encode()[:120])


class _Raw:
    """``…/shell``'s channel: framed input, raw output, the end shown by closing."""

    def __init__(self, client: ClientEnd) -> None:
        self._client = client
        self._frames = RawFrames(MAX_FRAME)

    async def incoming(self) -> AsyncIterator[bytes | Resize]:
        while data := await self._client.take():
            for item in self._frames.feed(data):
                yield item

    async def send(self, data: bytes) -> None:
        self._client.transport.write(data)
        await self._client.writable()

    async def exited(self, exit_code: int | None, signal: str | None) -> str:
        return exit_frame(exit_code, signal)[1]  # a raw stream has no place for it

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(OSError):
            self._client.transport.close()  # flushes the output first
