"""Standard input of sandbox processes: whole bytes, live pipes, shells reading commands."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime import StdinPipe

if TYPE_CHECKING:
    from _runtime_box import Box

    from fake_server.runtime.bashkit import CommandIO


# -- stdin ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_live_stdin_pipe_is_read_until_closed(box: Box) -> None:
    pipe = StdinPipe()
    task = asyncio.create_task(box.run(["/bin/bash", "-c", "cat; echo done"], stdin=pipe))
    pipe.write(b"one\n")
    pipe.write(b"two\n")
    await asyncio.sleep(0)
    pipe.close()
    result = await task
    assert (result.code, result.stdout) == (0, "one\ntwo\ndone\n")
    with pytest.raises(BrokenPipeError, match="stdin is closed"):
        pipe.write(b"late")


@pytest.mark.asyncio
async def test_a_script_that_never_reads_stdin_starts_without_waiting_for_close(
    box: Box,
) -> None:
    never_closed = StdinPipe()
    result = await box.run(
        ["/bin/sh", "-c", "trap '' TERM; echo up; sleep 300 & wait; echo down"], stdin=never_closed
    )
    assert (result.code, result.stdout) == (0, "up\ndown\n")
    assert box.clock.now() == pytest.approx(300.0)

    pipe = StdinPipe()
    reader = asyncio.create_task(box.run(["/bin/sh", "-c", "echo up; cat"], stdin=pipe))
    for _ in range(20):
        await asyncio.sleep(0)
    pipe.write(b"late data")  # cat may read stdin, so the script waited for it
    pipe.close()
    assert (await reader).stdout == "up\nlate data"


@pytest.mark.parametrize(
    "argv",
    [
        ["/bin/bash", "-lc", "cd -- '/tmp' || exit\nexec env  A='1' '/bin/bash' '-c' 'echo $A'"],
        ["bash", "-c", "exec -a x env -i -u B -- A=1 B=2 /usr/bin/env sh -c 'echo $A; :'"],
        ["env", "A=1", "bash", "-c", "bash -c 'exec echo $A'"],
        ["/usr/bin/env", "-", "A=1", "/bin/echo", "1"],
        ["bash", "-c", "exec >/tmp/out; env; echo 1 >&2; exec 2>&-"],
    ],
)
@pytest.mark.asyncio
async def test_wrappers_of_a_script_that_never_reads_stdin_start_at_once(
    box: Box, argv: list[str]
) -> None:
    never_closed = StdinPipe()
    # The bound only turns a regression (waiting for a close that never comes) into a failure.
    result = await asyncio.wait_for(box.run(argv, stdin=never_closed), timeout=60)
    assert (result.code, result.stdout + result.stderr) == (0, "1\n")


@pytest.mark.parametrize(
    "script",
    [
        "exec env A=1 bash -c 'cat'",
        "exec env -S 'echo 1'",  # an option not understood: may read
        "env A=1 bash",  # a shell reading commands from stdin
        "exec bash -c \"bash -c 'read x; echo \\$x'\"",
        "seven",  # registered: Python code that may read stdin
        "exec env $CMD",  # a computed word
    ],
)
@pytest.mark.asyncio
async def test_wrappers_of_a_script_that_may_read_stdin_wait_for_it(box: Box, script: str) -> None:
    box.commands.register("seven", lambda io: io.stdout_buffer.extend(io.stdin_data))
    pipe = StdinPipe()
    task = asyncio.create_task(box.run(["bash", "-c", script], env={"CMD": "cat"}, stdin=pipe))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done()
    pipe.write(b"1\n")
    pipe.close()
    await task


@pytest.mark.asyncio
async def test_a_registered_command_as_the_process_streams_stdin_and_ends_without_eof(
    box: Box,
) -> None:
    async def server(cmd: CommandIO) -> int:
        await cmd.write_stdout(b"serving\n")
        await cmd.clock.sleep(5)
        return 3

    async def upper(cmd: CommandIO) -> int:
        await cmd.write_stdout((await cmd.read_stdin()).upper())
        return 0

    box.commands.register("server", server)
    box.commands.register("upper", upper)
    never_closed = StdinPipe()
    served = await box.run(["/usr/bin/server"], stdin=never_closed)
    assert (served.code, served.stdout) == (3, "serving\n")
    assert not never_closed.closed

    pipe = StdinPipe()
    task = asyncio.create_task(box.run(["upper"], stdin=pipe))
    pipe.write(b"ab")
    await asyncio.sleep(0)
    pipe.write(b"c")
    pipe.close()
    assert (await task).stdout == "ABC"


@pytest.mark.asyncio
async def test_a_shell_without_c_runs_each_line_as_it_arrives(box: Box) -> None:
    pipe = StdinPipe()
    lines: list[bytes] = []
    arrived = asyncio.Event()

    async def on_chunk(stream: str, data: bytes) -> None:
        lines.append(data)
        arrived.set()

    task = asyncio.create_task(box.run(["/bin/bash"], stdin=pipe, cwd="/tmp", on_chunk=on_chunk))
    pipe.write(b'X=1; cd /root\nif true; then\n  echo "$X $(pwd)"\nfi\n')
    await arrived.wait()
    assert lines == [b"1 /root\n"]
    assert not task.done()
    pipe.write(b"f() { echo f$1; }\nf 9; exit 7\necho never\n")
    result = await task
    assert (result.code, result.stdout) == (7, "1 /root\nf9\n")
    assert not pipe.closed


@pytest.mark.asyncio
async def test_a_shell_reading_stdin_waits_for_the_rest_of_a_command(box: Box) -> None:
    pipe = StdinPipe()
    for line in (
        b"cat <<EOF\n",
        b"heredoc $((1 << 3))\n",
        b"EOF\n",
        b"echo 'multi\n",
        b"line' &&\n",
        b"echo joined\n",
        b"exit\n",
    ):
        pipe.write(line)
    result = await box.run(["bash", "-s"], stdin=pipe)
    assert (result.code, result.stdout) == (0, "heredoc 8\nmulti\nline\njoined\n")


@pytest.mark.asyncio
async def test_a_shell_reading_stdin_ends_with_the_last_status_at_eof(box: Box) -> None:
    pipe = StdinPipe()
    pipe.write(b"echo a; fals")
    pipe.write(b"e")
    pipe.close()
    result = await box.run(["sh", "-i"], stdin=pipe)
    assert (result.code, result.stdout) == (1, "a\n")


@pytest.mark.parametrize(
    ("argv", "stdin"),
    [
        (["reader"], None),  # no stdin: bashkit delivers end of input
        (["reader"], b"known up front"),  # buffered /exec stdin
        (["bash", "-c", "echo from a pipe | reader"], None),  # another stage's output
    ],
    ids=["none", "buffered", "pipeline"],
)
@pytest.mark.asyncio
async def test_the_clock_stays_held_while_a_command_reads_input_bashkit_is_delivering(
    box: Box, argv: list[str], stdin: bytes | None
) -> None:
    """Input that is already inside the sandbox arrives without any fake time passing: while
    bashkit's threads carry it to a registered command, a virtual clock must not jump (it did,
    and fired a provider's 30 s deadline on a loaded machine)."""
    box.commands.register("reader", lambda io: len(io.stdin_data) > 0)
    run = asyncio.ensure_future(box.run(argv, stdin=stdin))
    seen: list[int] = []
    while not run.done():
        if seen or box.clock.busy_tokens:
            seen.append(box.clock.busy_tokens)
        await asyncio.sleep(0)
    assert (await run).code == (0 if stdin is None and argv == ["reader"] else 1)
    assert seen, "the run never held the clock"
    assert min(seen) >= 1


@pytest.mark.asyncio
async def test_a_reader_fed_by_a_sleeping_stage_lets_the_clock_jump(box: Box) -> None:
    """The other side of the rule above: while an upstream ``sleep`` waits on the clock, the
    command reading its output must not hold time still (that would never end)."""
    box.commands.register("reader", lambda io: io.stdin_data == b"late\n")
    run = box.run(["bash", "-c", "{ sleep 5; echo late; } | reader"])
    result = await asyncio.wait_for(run, timeout=30)  # a guard against a hang, not a timing check
    assert (result.code, box.clock.now()) == (1, 5.0)
