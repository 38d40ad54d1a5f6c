"""The pipes a process-runtime child writes to: a start cancelled half-way leaves nothing open
and closes nothing it does not own."""

from __future__ import annotations

import asyncio
import os

import pytest

from fake_server.runtime.process.sandbox.spawn import make_pipes

pytestmark = pytest.mark.asyncio


def open_fds() -> set[int]:
    """This process's open fds (less the one the listing itself used)."""
    return {int(name) for name in os.listdir("/proc/self/fd") if _is_open(int(name))}


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.mark.parametrize("turns", [0, 1, 2])
async def test_a_cancelled_make_pipes_closes_its_own_fds_and_nobody_else_s(turns: int) -> None:
    before = open_fds()
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    task = asyncio.ensure_future(make_pipes())
    for _ in range(turns):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # A file opened now may take a number the pipes had; their closing must leave it alone.
    neighbour = os.open("/dev/null", os.O_RDONLY)
    try:
        for _ in range(3):
            await asyncio.sleep(0)
        os.fstat(neighbour)  # still ours: raises OSError if a late close took it
        assert open_fds() - before == {neighbour}
    finally:
        os.close(neighbour)
        loop.set_exception_handler(None)
    # A transport whose file was closed behind its back fails its own close (EBADF, reported
    # to the loop's handler) and stays "closing" for ever: an unclosed-transport warning later.
    assert errors == []


async def test_pipes_close_on_the_next_turn_with_every_fd() -> None:
    before = open_fds()
    pipes, ends = await make_pipes()
    os.write(ends[0], b"out")
    for fd in ends:
        os.close(fd)
    assert await pipes.stdout.read() == b"out"
    assert await pipes.stderr.read() == b""
    pipes.close()
    await asyncio.sleep(0)
    assert open_fds() == before
