"""Starting a sandbox's process (``nsenter``) and moving bytes through its pipes.

A cancelled start kills the whole process group (not just ``nsenter``), and a killed process
is reaped together with its pipes even when the waiter is cancelled again meanwhile. The
output pipes are the fake's own (``Pipes``), so their inodes are known: a process of the
sandbox still holding one belongs to the exec.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal as signals
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fake_server.runtime.pipes import StdinPipe

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from fake_server.runtime.api import Sink

__all__ = ["Pipes", "feed", "make_pipes", "pump", "reap", "spawn"]

#: Bytes read from a pipe at a time.
READ = 64 * 1024


async def pump(
    stream: asyncio.StreamReader | None,
    sink: Sink,
    at_end: Callable[[], Awaitable[None]] | None = None,
) -> None:
    if stream is None:
        return
    while True:
        data = await stream.read(READ)
        if not data:
            break
        await sink(data)
    if at_end is not None:
        await at_end()


async def feed(writer: asyncio.StreamWriter, stdin: bytes | StdinPipe | None) -> None:
    """Copy stdin into the process; a process that stopped reading ends the copy (EPIPE)."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if isinstance(stdin, StdinPipe):
            while chunk := await stdin.read_chunk():
                writer.write(chunk)
                await writer.drain()
        elif stdin:
            writer.write(stdin)
            await writer.drain()
    writer.close()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        await writer.wait_closed()


@dataclass(slots=True)
class Pipes:
    """The read ends of a process's stdout and stderr, and their inodes."""

    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    inodes: frozenset[int]
    transports: list[asyncio.BaseTransport] = field(default_factory=list)

    def close(self) -> None:
        for transport in self.transports:
            transport.close()


async def make_pipes() -> tuple[Pipes, list[int]]:
    """Two pipes: ``Pipes`` over their read ends, and their write ends for the child."""
    loop = asyncio.get_running_loop()
    fds = [*os.pipe(), *os.pipe()]
    for fd in fds:
        os.set_inheritable(fd, False)
    streams = [asyncio.StreamReader(limit=READ, loop=loop) for _ in range(2)]
    pipes = Pipes(streams[0], streams[1], frozenset(os.fstat(fd).st_ino for fd in fds[::2]))
    # Each read end is owned by its file object from here on: closing a file twice is a no-op,
    # whereas an os.close() behind a failed transport's back makes its own close fail (leaving
    # it "closing" for ever) or close whatever file took the number meanwhile.
    files = [os.fdopen(fd, "rb", buffering=0) for fd in fds[::2]]
    try:
        for stream, file in zip(streams, files, strict=True):
            transport, _ = await loop.connect_read_pipe(
                functools.partial(asyncio.StreamReaderProtocol, stream), file
            )
            pipes.transports.append(transport)
    except BaseException:
        pipes.close()
        for file in files:
            file.close()
        for fd in fds[1::2]:
            os.close(fd)
        raise
    return pipes, fds[1::2]


async def spawn(
    command: Sequence[str],
    *,
    piped: bool,
    env: dict[str, str] | None = None,
    pass_fds: Sequence[int] = (),
    preexec: Callable[[], None] | None = None,
) -> tuple[asyncio.subprocess.Process, Pipes]:
    """Start ``command`` with ``env`` and the descriptors ``pass_fds`` (handed over: they are
    closed here once the child has its copies), ``preexec`` run in the child before it execs
    (a seccomp filter); cancelled meanwhile, it is killed with its whole process group
    (asyncio would kill only the first process)."""
    try:
        pipes, ends = await make_pipes()
    except BaseException:
        _close(pass_fds)
        raise
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE if piped else asyncio.subprocess.DEVNULL,
            stdout=ends[0],
            stderr=ends[1],
            start_new_session=True,
            env=env or {},
            pass_fds=pass_fds,
            preexec_fn=preexec,
        )
    )
    try:
        return await asyncio.shield(spawn), pipes
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            proc = await spawn
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signals.SIGKILL)
            await reap(proc, [])
        pipes.close()
        raise
    except BaseException:
        pipes.close()
        raise
    finally:
        owned = [*ends, *pass_fds]
        if spawn.done():
            _close(owned)
        else:  # still starting: close once it has (the child has its copies by then)
            spawn.add_done_callback(lambda _: _close(owned))


def _close(fds: Sequence[int]) -> None:
    for fd in fds:
        os.close(fd)


async def reap(proc: asyncio.subprocess.Process, pumps: Sequence[asyncio.Future[None]]) -> None:
    """After SIGKILL: wait for bwrap and its pipes, even if cancelled again meanwhile."""
    waiting = asyncio.ensure_future(asyncio.gather(proc.wait(), *pumps[:2]))
    for _ in range(3):
        try:
            await asyncio.wait_for(asyncio.shield(waiting), timeout=5.0)
            return
        except asyncio.CancelledError:
            continue
        except (TimeoutError, OSError):
            return
