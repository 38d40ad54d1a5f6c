"""A process-runtime command on a real PTY.

The command runs as ``setsid -cw CMD…`` inside the sandbox: a new session whose controlling
terminal is the PTY, made inside the sandbox's PID namespace so job control (``bash -i``
putting a job in the foreground, Ctrl-C reaching it) sees consistent process groups. The
kernel's line discipline does the rest: echo, ``\\r\\n`` output, Ctrl-C as SIGINT, and
``SIGWINCH`` when the window size (set on the master side) changes.

The PTY is made in the sandbox's own ``devpts`` (its ``/dev/pts/ptmx``, reached through its
init's root with no link followed), so ``tty`` inside names it (``/dev/pts/0``); one made on
the host's would be a terminal the sandbox has no name for (``not a tty``). Where that cannot
be done the host's is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import signal as signals
import stat
import struct
import termios
from typing import TYPE_CHECKING, Protocol, TypeVar

from fake_server.runtime.pipes import StdinPipe

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from fake_server.runtime.api import Sink
    from fake_server.runtime.terminal import Terminal

__all__ = ["SETSID", "open_pty", "run_on_pty", "set_size"]

_READ = 64 * 1024
#: Chunks read ahead of the consumer before reading pauses (back-pressure on the program).
_AHEAD = 16
#: util-linux ``setsid``, under the host's ``/usr`` (which every sandbox sees read-only).
_FOUND = shutil.which("setsid", path="/usr/bin:/usr/sbin")
SETSID = _FOUND if _FOUND and _FOUND.startswith("/usr/") else None


class _Tree(Protocol):
    def signal(self, signum: int, *, tree_scope: bool) -> None: ...


_Run = TypeVar("_Run", bound=_Tree)

#: Real seconds a killed command's tree gets to be reaped.
_DRAIN_SECONDS = 5.0


#: Linux's ioctls (asm-generic numbers): unlock a PTY, open its peer (the slave) safely.
_TIOCSPTLCK, _TIOCGPTPEER = 0x40045431, 0x5441
_PTMX = os.makedev(5, 2)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_pty(root: str | None = None) -> tuple[int, int]:
    """A PTY's master and slave: in the ``devpts`` under ``root`` (a sandbox's root, as
    ``/proc/<pid>/root``) when it has one, else the host's."""
    if root is not None:
        with contextlib.suppress(OSError):
            return _open_in(root)
    return os.openpty()


def _open_in(root: str) -> tuple[int, int]:
    """``root``'s ``dev/pts/ptmx`` walked one component at a time without following a link
    (the sandbox owns those names), checked to be the PTY multiplexer, then its peer."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    try:
        for name in ("dev", "pts"):
            fds.append(os.open(name, _DIR, dir_fd=fds[-1]))
        flags = os.O_RDWR | os.O_NOCTTY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        master = os.open("ptmx", flags, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)
    try:
        found = os.fstat(master)
        if not stat.S_ISCHR(found.st_mode) or found.st_rdev != _PTMX:
            raise OSError("not the PTY multiplexer")
        fcntl.ioctl(master, _TIOCSPTLCK, struct.pack("i", 0))
        slave = fcntl.ioctl(master, _TIOCGPTPEER, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
        os.set_blocking(master, True)
    except BaseException:
        os.close(master)
        raise
    return master, slave


def set_size(fd: int, rows: int, cols: int) -> None:
    """Set the PTY's window; the kernel sends SIGWINCH to its foreground process group."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


async def run_on_pty(
    command: Sequence[str],
    terminal: Terminal,
    stdin: bytes | StdinPipe | None,
    on_output: Sink,
    track: Callable[[int], _Run],
    env: dict[str, str] | None = None,
    pass_fds: Sequence[int] = (),
    root: str | None = None,
    preexec: Callable[[], None] | None = None,
) -> tuple[int, _Run]:
    """Run ``command`` (``nsenter``'s argv, ending in ``setsid -cw …``) with a PTY as its stdio
    (in the ``devpts`` under ``root``, see ``open_pty``) and the descriptors ``pass_fds``
    (handed over: closed once the child started); ``preexec`` runs in the child before it
    execs (a seccomp filter).

    Returns its exit status and the ``Run`` that ``track`` made for its pid. Output is
    read until every holder of the PTY closed it.
    """
    master, slave = open_pty(root)
    try:
        set_size(master, *terminal.size)
        os.set_blocking(master, False)
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *command,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                env=env or {},
                pass_fds=pass_fds,
                preexec_fn=preexec,
            )
        )
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:  # killed while starting: the whole group, then reaped
            with contextlib.suppress(BaseException):
                started = await spawn
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(started.pid, signals.SIGKILL)
                await asyncio.wait_for(started.wait(), _DRAIN_SECONDS)
            raise
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
        for fd in pass_fds:
            os.close(fd)
    run = track(proc.pid)
    stop_listening = terminal.listen(lambda rows, cols: _resize(master, rows, cols))
    # A resize while the command was starting (the CLI sends its window right after the 101)
    # changed ``terminal`` before anyone listened: the window takes it now.
    _resize(master, *terminal.size)
    reader = _Reader(master, on_output)
    feeding = asyncio.ensure_future(_feed(master, stdin))
    try:
        code = await proc.wait()
        # To the end, however long the reader takes: bwrap has exited, so its PID namespace
        # is gone with every process that held the PTY, and the end comes once the output
        # written before is read.
        await reader.done()
    except asyncio.CancelledError:
        run.signal(signals.SIGKILL, tree_scope=True)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(proc.wait()), _DRAIN_SECONDS)
        raise
    finally:
        stop_listening()
        feeding.cancel()
        reader.close()
        os.close(master)
    return code, run


def _resize(fd: int, rows: int, cols: int) -> None:
    with contextlib.suppress(OSError):  # the PTY closed meanwhile
        set_size(fd, rows, cols)


class _Reader:
    """Reads the master side into ``sink`` in order, pausing while the sink falls behind."""

    def __init__(self, fd: int, sink: Sink) -> None:
        self._fd = fd
        self._sink = sink
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._reading = False
        self._pump = asyncio.ensure_future(self._deliver())
        self._resume()

    def _resume(self) -> None:
        if not self._reading:
            self._reading = True
            self._loop.add_reader(self._fd, self._readable)

    def _pause(self) -> None:
        if self._reading:
            self._reading = False
            self._loop.remove_reader(self._fd)

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, _READ)
        except BlockingIOError:
            return
        except OSError:  # EIO: no process holds the PTY any more
            data = b""
        if not data:
            self._pause()
            self._queue.put_nowait(None)
            return
        self._queue.put_nowait(data)
        if self._queue.qsize() >= _AHEAD:
            self._pause()

    async def _deliver(self) -> None:
        while (data := await self._queue.get()) is not None:
            await self._sink(data)
            if self._queue.empty() and self._reading is False:
                self._resume()

    async def done(self) -> None:
        await asyncio.shield(self._pump)

    def close(self) -> None:
        self._pause()
        self._pump.cancel()


async def _feed(fd: int, stdin: bytes | StdinPipe | None) -> None:
    """Type the client's input into the PTY as it arrives."""
    if isinstance(stdin, StdinPipe):
        while chunk := await stdin.read_chunk():
            await _write(fd, chunk)
    elif stdin:
        await _write(fd, stdin)


async def _write(fd: int, data: bytes) -> None:
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await _writable(loop, fd)
        except OSError:
            return  # the PTY closed: nobody reads the input any more


async def _writable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(fd, wake)
    try:
        await ready
    finally:
        loop.remove_writer(fd)
