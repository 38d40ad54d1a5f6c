"""``GET …/shell-ws``: a login shell on a PTY in the sandbox, over a WebSocket.

The shell is a managed PTY process (``/bin/bash -l``) on either runtime; the frame format is in
``http.shell_frames``. Auth, the owner check and the sandbox's state are checked before the
upgrade, so a bad key is 401, a foreign or unknown sandbox 404 and a paused one 409, as on
the REST routes. A client that sends nothing for ``IDLE_SECONDS`` of fake time, or leaves
more than ``MAX_PENDING_INPUT`` bytes the shell has not read, gets the socket closed and the
shell killed: a vanished client or a flood leaves no process behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from aiohttp import WSMsgType, web

from fake_server.http.keys import BACKEND_KEY, WORLD_KEY, sandbox_id
from fake_server.http.shell_frames import (
    CLOSE_FLOOD,
    CLOSE_IDLE,
    CLOSE_NORMAL,
    Resize,
    decode_text,
    exit_frame,
)
from fake_server.http.wire.common import query_int
from fake_server.models import ApiError, BadRequest, Conflict, OutputFrame

if TYPE_CHECKING:
    from fake_server.clock import Clock
    from fake_server.models import Account, Process

__all__ = ["IDLE_SECONDS", "MAX_FRAME", "MAX_PENDING_INPUT", "relay_shell", "shell_ws"]

#: Fake-clock seconds without a frame from the client after which the shell is ended.
IDLE_SECONDS = 600.0
#: The largest frame a client may send.
MAX_FRAME = 64 * 1024
#: Input the shell has not read yet, beyond which the connection is a flood and is closed.
MAX_PENDING_INPUT = 1024 * 1024


async def shell_ws(request: web.Request) -> web.StreamResponse:
    ws = web.WebSocketResponse(max_msg_size=MAX_FRAME, autoping=True)
    if not ws.can_prepare(request).ok:
        raise ApiError("expects a WebSocket upgrade", status=426, code="upgrade_required")
    backend, box = request[BACKEND_KEY], sandbox_id(request)
    shell = backend.open_shell(box, query_int(request, "rows", 24), query_int(request, "cols", 80))
    await ws.prepare(request)
    await relay_shell(ws, backend, box, shell, request.app[WORLD_KEY].ctx.clock)
    return ws


async def relay_shell(
    ws: web.WebSocketResponse, backend: Account, box: str, shell: Process, clock: Clock
) -> None:
    """Relay a prepared socket and an open shell both ways until either ends; the shell is
    killed if it is still running then (the dashboard's terminal uses this too)."""
    try:
        await _Session(ws, backend, box, shell, clock).run()
    finally:
        if not shell.tree_exited:
            shell.crash("SIGKILL")


class _Session:
    """Three tasks (output, input, idle watch); the first to end says how to close."""

    def __init__(
        self,
        ws: web.WebSocketResponse,
        backend: Account,
        box: str,
        shell: Process,
        clock: Clock,
    ) -> None:
        self.ws = ws
        self.shell = shell
        self.backend = backend
        self.sandbox_id = box
        self.clock = clock
        self.last_frame = self.clock.now()
        #: The close code and reason, set by the task that ends the session.
        self.close_with: tuple[int, str] = (CLOSE_NORMAL, "")

    async def run(self) -> None:
        tasks = [
            asyncio.ensure_future(self._output()),
            asyncio.ensure_future(self._input()),
            asyncio.ensure_future(self._idle()),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, ConnectionResetError):
                    await task
        if not self.ws.closed:
            code, reason = self.close_with
            with contextlib.suppress(ConnectionResetError):
                await self.ws.close(code=code, message=reason.encode()[:120])

    async def _output(self) -> None:
        """The shell's output as it comes, then its exit; waiting takes no hold of the clock
        (``Process.changed``), so a virtual clock can move while the shell is quiet."""
        shell, cursor = self.shell, 0
        while True:
            changed = shell.changed()  # before reading: a change meanwhile still wakes it
            for frame in shell.output.after(cursor):
                if isinstance(frame, OutputFrame):
                    await self.ws.send_bytes(frame.data)
                cursor = frame.seq
            if shell.tree_exited and cursor >= shell.output.newest_seq:
                changed.close()
                text, reason = exit_frame(shell.exit_code, shell.signal)
                await self.ws.send_str(text)
                self.close_with = (CLOSE_NORMAL, reason)
                return
            await changed

    async def _input(self) -> None:
        async for message in self.ws:
            self.last_frame = self.clock.now()
            if message.type == WSMsgType.BINARY:
                data: bytes | Resize = message.data
            elif message.type == WSMsgType.TEXT:
                try:
                    data = decode_text(message.data)
                except ValueError as exc:
                    self.close_with = (CLOSE_FLOOD, str(exc))
                    return
            else:
                return  # an error frame or a close: the shell ends with the connection
            if not self._deliver(data):
                return

    def _deliver(self, data: bytes | Resize) -> bool:
        """Pass one frame to the shell; False when the connection must end."""
        try:
            if isinstance(data, Resize):
                self.backend.resize_process(
                    self.sandbox_id, self.shell.process_id, data.rows, data.cols
                )
                return True
            self.backend.write_process_input(self.sandbox_id, self.shell.process_id, data)
        except (BadRequest, Conflict) as exc:
            self.close_with = (CLOSE_FLOOD, exc.message)
            return False
        if self.shell.stdin.pending > MAX_PENDING_INPUT:
            self.close_with = (CLOSE_FLOOD, "input flood: the shell is not reading")
            return False
        return True

    async def _idle(self) -> None:
        while True:
            left = self.last_frame + IDLE_SECONDS - self.clock.now()
            if left <= 0:
                self.close_with = (CLOSE_IDLE, "idle timeout")
                return
            await self.clock.sleep(left)
