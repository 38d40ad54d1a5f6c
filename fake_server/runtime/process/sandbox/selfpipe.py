"""``/run/self``: the agent's second way in, a named pipe taking ``park`` or ``retire``.

The official CLI's ``createos sandbox self`` signals the sandbox it runs in over the agent's
HTTP port and, where that is not there, by writing one verb to ``/run/self``: ``park`` pauses
the sandbox, ``retire`` destroys it; the pipe takes no reason (NodeOps-app/createos-cli
``cmd/sandbox/self.go``: ``selfFifoPath = "/run/self"``, ``echo park > /run/self``). The fake
makes the pipe in the sandbox's own ``/run`` (resolved inside its root, so a link a process
planted leads nowhere else) before the sandbox's first process runs, and reads it on the
event loop; it keeps a writer end of its own, so the pipe never reads as closed. Lines that
are no verb are ignored, as a pipe has nobody to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.runtime.process.storage.dirdisk import DirDisk

__all__ = ["PATH", "VERBS", "SelfPipe"]

PATH = "/run/self"
#: What each line does (the agent's actions).
VERBS = {b"park": "pause", b"retire": "delete"}
#: Bytes kept while no newline came: a writer that never ends a line cannot grow memory.
_LINE_LIMIT = 4096


class SelfPipe:
    """One sandbox's ``/run/self``; ``open`` before its first process, ``close`` at the end."""

    def __init__(self, disk: DirDisk, handler: Callable[[str, str], None]) -> None:
        self._disk = disk
        self._handler = handler
        self._fd: int | None = None
        self._pending = b""

    def open(self) -> None:
        """Make the pipe (replacing whatever is at that name) and start reading; once."""
        if self._fd is not None:
            return
        directory, name = os.path.split(PATH)
        dirfd = self._disk.open_dir(directory)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dirfd)  # the name itself, never what a link points at
            os.mkfifo(name, 0o600, dir_fd=dirfd)
            flags = os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(name, flags, dir_fd=dirfd)
        finally:
            os.close(dirfd)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):  # pragma: no cover - swapped in a race
            os.close(fd)
            return
        os.fchmod(fd, 0o622)  # any user inside may signal, as with the loopback port
        self._fd = fd
        asyncio.get_running_loop().add_reader(fd, self._readable)

    def _readable(self) -> None:
        fd = self._fd
        if fd is None:
            return
        try:
            data = os.read(fd, 4096)
        except (BlockingIOError, InterruptedError):
            return
        lines = (self._pending + data).split(b"\n")
        self._pending = lines.pop()[-_LINE_LIMIT:]
        for line in lines:
            action = VERBS.get(line.strip())
            if action is not None:
                asyncio.get_running_loop().call_soon(self._handler, action, "")

    def close(self) -> None:
        """Stop reading; idempotent (the pipe goes with the sandbox's files)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            asyncio.get_running_loop().remove_reader(fd)
        os.close(fd)
