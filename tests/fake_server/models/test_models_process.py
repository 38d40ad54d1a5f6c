"""The process model without HTTP or a shell: journal replay, exit frames, expiry, heartbeats."""

from __future__ import annotations

import asyncio

import pytest

from fake_server import VirtualClock
from fake_server.http.wire.processes import process_json
from fake_server.models import (
    Conflict,
    ExitFrame,
    ExpiredFrame,
    HeartbeatFrame,
    OutputFrame,
    Process,
    ProcessSpec,
)
from fake_server.runtime import StdinPipe

pytestmark = pytest.mark.asyncio


async def until_waiting(clock: VirtualClock) -> None:
    """Let the loop run until something sleeps on the clock (sleepers register a step late)."""
    for _ in range(100):
        if clock.next_deadline() is not None:
            return
        await asyncio.sleep(0)
    raise AssertionError("nothing started waiting on the clock")


def make_process(clock: VirtualClock, *, pty: bool = False) -> Process:
    return Process(
        process_id="proc-1",
        pid=101,
        spec=ProcessSpec(cmd="bash", pty=(24, 80) if pty else None),
        created_at=clock.time(),
        clock=clock,
        stdin=StdinPipe(),
    )


async def test_follow_replays_after_the_cursor_then_exits() -> None:
    clock = VirtualClock(autojump=False)
    process = make_process(clock)
    for chunk in (b"a", b"b", b"c"):
        process.write_output("stdout", chunk)
    process.crash("SIGTERM")
    frames = [frame async for frame in process.follow(1, heartbeat=5.0)]
    assert frames == [
        OutputFrame(2, "stdout", b"b"),
        OutputFrame(3, "stdout", b"c"),
        ExitFrame(None, "SIGTERM"),
    ]
    assert (process.state, process.tree_exited, process.finished_at) == (
        "exited",
        True,
        clock.time(),
    )


async def test_heartbeat_after_five_quiet_seconds_then_live_data() -> None:
    clock = VirtualClock(autojump=False)
    process = make_process(clock)
    stream = process.follow(0, heartbeat=5.0)
    pending = asyncio.ensure_future(anext(stream))
    await until_waiting(clock)
    clock.advance(4.9)
    await asyncio.sleep(0)
    assert not pending.done()
    clock.advance(0.1)
    assert await pending == HeartbeatFrame()
    follow_up = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    process.write_output("stderr", b"late")
    assert await follow_up == OutputFrame(1, "stderr", b"late")
    await stream.aclose()


async def test_reader_overtaken_by_eviction_gets_an_expiry_frame() -> None:
    clock = VirtualClock(autojump=False)
    process = make_process(clock)
    process.write_output("stdout", b"1")
    stream = process.follow(0, heartbeat=5.0)
    assert await anext(stream) == OutputFrame(1, "stdout", b"1")
    process.write_output("stdout", b"2")
    process.write_output("stdout", b"3")
    process.evict_output(up_to_seq=2)
    assert await anext(stream) == ExpiredFrame(oldest_available_seq=3)
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_input_and_stdin_rules() -> None:
    clock = VirtualClock(autojump=False)
    process = make_process(clock)
    assert [process.write_input(b"x"), process.write_input(b"y")] == [1, 2]
    process.close_stdin()
    with pytest.raises(Conflict, match="stdin is already closed"):
        process.close_stdin()
    with pytest.raises(Conflict, match="stdin is closed"):
        process.write_input(b"z")
    pty = make_process(clock, pty=True)
    assert pty.kind == "pty"
    with pytest.raises(Conflict, match="a pty has no separate stdin to close"):
        pty.close_stdin()


async def test_wait_exit_times_out_on_the_clock() -> None:
    clock = VirtualClock(autojump=False)
    process = make_process(clock)
    waiting = asyncio.ensure_future(process.wait_exit(3.0))
    await until_waiting(clock)
    clock.advance(3.0)
    assert await waiting is False
    process.crash()
    assert await process.wait_exit(0) is True
    assert process.signal == "SIGKILL"


async def test_its_reported_cwd_is_its_own_or_its_sandbox_s_home() -> None:
    clock = VirtualClock(autojump=False)
    spec = ProcessSpec(cmd="pwd")
    # The process runtime's host layout runs processes as user sandbox in /home/sandbox.
    homed = Process(
        process_id="proc-1", pid=1, spec=spec, created_at=0.0, clock=clock,
        stdin=StdinPipe(), home="/home/sandbox",
    )  # fmt: skip
    assert process_json(homed)["cwd"] == "/home/sandbox"
    assert process_json(make_process(clock))["cwd"] == "/root"
    placed = Process(
        process_id="proc-2", pid=2, spec=ProcessSpec(cmd="pwd", cwd="/tmp"), created_at=0.0,
        clock=clock, stdin=StdinPipe(), home="/home/sandbox",
    )  # fmt: skip
    assert process_json(placed)["cwd"] == "/tmp"
