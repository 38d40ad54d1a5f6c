"""One interactive shell session: a login shell on a PTY relayed to a client connection.

Both shell routes share it: ``GET …/shell-ws`` over a WebSocket and ``POST …/shell`` over an
HTTP Upgrade; what differs (how input arrives, how output and the exit go out) is a
``Channel``. A client that sends nothing for ``IDLE_SECONDS`` of fake time, or leaves more
than ``MAX_PENDING_INPUT`` bytes the shell has not read, gets the connection closed and the
shell killed: a vanished client or a flood leaves no process behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Protocol

from fake_server.http.streams.shell_frames import CLOSE_FLOOD, CLOSE_IDLE, CLOSE_NORMAL, Resize
from fake_server.models import BadRequest, Conflict, OutputFrame

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fake_server.clock import Clock
    from fake_server.models import Account, Process

__all__ = ["IDLE_SECONDS", "MAX_FRAME", "MAX_PENDING_INPUT", "Channel", "run_session"]

#: Fake-clock seconds without a frame from the client after which the shell is ended.
IDLE_SECONDS = 600.0
#: The largest frame a client may send.
MAX_FRAME = 64 * 1024
#: Input the shell has not read yet, beyond which the connection is a flood and is closed.
MAX_PENDING_INPUT = 1024 * 1024


class Channel(Protocol):
    """A shell's client connection, in one route's format."""

    def incoming(self) -> AsyncIterator[bytes | Resize]:
        """Keystrokes and resizes until the client ends; ``ValueError`` for a bad frame."""
        ...

    async def send(self, data: bytes) -> None: ...

    async def exited(self, exit_code: int | None, signal: str | None) -> str:
        """Announce the shell's end; the close reason."""
        ...

    async def close(self, code: int, reason: str) -> None: ...


async def run_session(
    channel: Channel, backend: Account, box: str, shell: Process, clock: Clock
) -> None:
    """Relay until either side ends; the shell is killed if it is still running then."""
    try:
        await _Session(channel, backend, box, shell, clock).run()
    finally:
        if not shell.tree_exited:
            shell.crash("SIGKILL")


class _Session:
    """Three tasks (output, input, idle watch); the first to end says how to close."""

    def __init__(
        self, channel: Channel, backend: Account, box: str, shell: Process, clock: Clock
    ) -> None:
        self.channel = channel
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
        with contextlib.suppress(ConnectionResetError):
            await self.channel.close(*self.close_with)

    async def _output(self) -> None:
        """The shell's output as it comes, then its exit; waiting takes no hold of the clock
        (``Process.changed``), so a virtual clock can move while the shell is quiet."""
        shell, cursor = self.shell, 0
        while True:
            changed = shell.changed()  # before reading: a change meanwhile still wakes it
            for frame in shell.output.after(cursor):
                if isinstance(frame, OutputFrame):
                    await self.channel.send(frame.data)
                cursor = frame.seq
            if shell.tree_exited and cursor >= shell.output.newest_seq:
                changed.close()
                reason = await self.channel.exited(shell.exit_code, shell.signal)
                self.close_with = (CLOSE_NORMAL, reason)
                return
            await changed

    async def _input(self) -> None:
        try:
            async for data in self.channel.incoming():
                self.last_frame = self.clock.now()
                if not self._deliver(data):
                    return
        except ValueError as exc:
            self.close_with = (CLOSE_FLOOD, str(exc))

    def _deliver(self, data: bytes | Resize) -> bool:
        """Pass one frame to the shell; False when the connection must end."""
        try:
            if isinstance(data, Resize):
                self.backend.processes.resize_process(
                    self.sandbox_id, self.shell.process_id, data.rows, data.cols
                )
                return True
            self.backend.processes.write_process_input(self.sandbox_id, self.shell.process_id, data)
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
