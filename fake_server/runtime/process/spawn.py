"""Starting bwrap as a child process and moving bytes through its pipes.

A cancelled start kills bwrap's whole process group (not just bwrap), and a killed process is
reaped together with its pipes even when the waiter is cancelled again meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals
from typing import TYPE_CHECKING

from fake_server.runtime.pipes import StdinPipe

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from fake_server.runtime.api import Sink

__all__ = ["feed", "pump", "reap", "spawn"]

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


async def spawn(command: Sequence[str], *, piped: bool) -> asyncio.subprocess.Process:
    """Start bwrap; cancelled meanwhile, it is killed with its whole process group.

    asyncio would kill only bwrap itself, which can leave the sandbox's init (forked before
    it took ``--die-with-parent``) running with its namespaces."""
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE if piped else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env={},
        )
    )
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            proc = await spawn
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signals.SIGKILL)
            await reap(proc, [])
        raise


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
