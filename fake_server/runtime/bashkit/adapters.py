"""Custom commands that tie the interpreter to the fake: ``sleep``, stdin, registered commands.

* ``sleep`` waits on the fake's clock (bashkit's builtin sleeps in real time and ignores
  cancellation), so a ``sleep 30`` under a ``VirtualClock`` costs no real time and a kill ends it
  at once.
* ``STDIN_COMMAND`` is the first stage of ``STDIN_COMMAND | <argv>``: it streams the process's
  stdin (whole bytes or a live ``StdinPipe``) into the command.
* registered commands receive a ``CommandIO``.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fake_server.runtime.bashkit.commands import CommandIO
from fake_server.runtime.pipes import BytesSource

if TYPE_CHECKING:
    import bashkit

    from fake_server.runtime.bashkit.commands import RegisteredCommand
    from fake_server.runtime.bashkit.runstate import RunState, Sink
    from fake_server.runtime.pipes import StdinSource

__all__ = [
    "STDIN_COMMAND",
    "leader_command",
    "registered_command",
    "sleep_command",
    "stdin_command",
]

#: Internal name of the stdin feeder; never on any disk, so scripts cannot stumble on it.
STDIN_COMMAND = "__createos_stdin__"

CommandCallback = Callable[["bashkit.CommandContext"], Awaitable[int]]

_DURATION = re.compile(r"^(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?P<unit>[smhd]?)$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float | None:
    """GNU ``sleep`` operand: a non-negative number with an optional s/m/h/d suffix."""
    if text in ("inf", "infinity"):
        return math.inf
    match = _DURATION.match(text)
    if match is None:
        return None
    return float(match["num"]) * _UNITS[match["unit"]]


def sleep_command(run: RunState) -> CommandCallback:
    """``sleep NUMBER[SUFFIX]...`` on the run's clock; operands add up as in GNU sleep."""

    async def sleep(ctx: bashkit.CommandContext) -> int:
        operands = [a for a in ctx.argv if a != "--"]
        if not operands:
            await _usage(ctx, "sleep: missing operand\n")
            return 1
        total = 0.0
        for operand in operands:
            seconds = parse_duration(operand)
            if seconds is None:
                await _usage(ctx, f"sleep: invalid time interval '{operand}'\n")
                return 1
            total += seconds
        await run.settle(ctx)
        with run.waiting(), run.killed_on_cancel():
            if math.isinf(total):
                with run.clock.idle():
                    await asyncio.get_running_loop().create_future()
            else:
                await run.clock.sleep(total)
        return 0

    return sleep


async def _usage(ctx: bashkit.CommandContext, message: str) -> None:
    name = ctx.name or "sleep"
    await ctx.stderr.write(f"{message}Try '{name} --help' for more information.\n".encode())


def stdin_command(run: RunState, source: StdinSource) -> CommandCallback:
    """Feeds ``source`` into the pipeline; waits for a live pipe without holding the clock."""

    async def feed(ctx: bashkit.CommandContext) -> int:
        await run.settle(ctx)
        with run.killed_on_cancel():
            while True:
                if isinstance(source, BytesSource):  # known up front: nothing to wait for
                    chunk = b"" if run.leader_done.is_set() else await source.read_chunk()
                else:
                    with run.waiting(), run.clock.idle():
                        chunk = await _next_chunk(source, run.leader_done)
                if not chunk:
                    return 0
                await ctx.stdout.write(chunk)

    return feed


async def _next_chunk(source: StdinSource, leader_done: asyncio.Event) -> bytes:
    """The next chunk, or ``b""`` once the command reading it has ended (like SIGPIPE)."""
    if leader_done.is_set():
        return b""
    read = asyncio.ensure_future(source.read_chunk())
    done = asyncio.ensure_future(leader_done.wait())
    try:
        await asyncio.wait({read, done}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        done.cancel()
        if not read.done():
            read.cancel()
    return read.result() if read.done() and not read.cancelled() else b""


def leader_command(run: RunState, callback: CommandCallback) -> CommandCallback:
    """Wraps the command that *is* the process (``argv[0]``) so its stdin stops when it ends.

    Without this a process whose stdin is never closed would outlive its own command: bashkit
    waits for every pipeline stage, including the stdin feeder.
    """

    async def leader(ctx: bashkit.CommandContext) -> int:
        try:
            return await callback(ctx)
        finally:
            run.leader_done.set()

    return leader


def registered_command(
    run: RunState, command: RegisteredCommand, direct: tuple[Sink, Sink] | None = None
) -> CommandCallback:
    """Adapts bashkit's ``CommandContext`` to the ``CommandIO`` a registered command expects.

    ``direct``: the process's own stdout/stderr sinks, given when this command *is* the
    process (nothing redirects or pipes its output); writes then skip bashkit's 4 KiB pieces.
    """

    async def invoke(ctx: bashkit.CommandContext) -> int:
        cache: list[bytes] = []
        out_sink, err_sink = direct if direct is not None else (ctx.stdout.write, ctx.stderr.write)

        async def write_out(data: bytes) -> None:
            await out_sink(data)

        async def write_err(data: bytes) -> None:
            await err_sink(data)

        async def read_all() -> bytes:
            if not cache:
                chunks: list[bytes] = []
                with run.clock.idle(), run.reading():
                    async for chunk in ctx.stdin:
                        chunks.append(bytes(chunk))
                cache.append(b"".join(chunks))
            return cache[0]

        io = CommandIO(
            argv=[command.name, *ctx.argv],
            env=dict(ctx.env),
            cwd=str(ctx.cwd),
            disk=run.disk,
            clock=run.clock,
            _read=read_all,
            _write_out=write_out,
            _write_err=write_err,
        )
        await run.settle(ctx)
        with (
            run.waiting(),
            run.killed_on_cancel(),
            run.ignoring_sigterm(command.ignores_sigterm),
            run.clock.busy(),
        ):
            try:
                if command.is_async:
                    result: Any = await command.func(io)  # type: ignore[misc]
                else:
                    io.stdin_data = await read_all()
                    result = command.func(io)
                    if inspect.isawaitable(result):
                        result = await result
                if io.stdout_buffer:
                    await write_out(bytes(io.stdout_buffer))
                if io.stderr_buffer:
                    await write_err(bytes(io.stderr_buffer))
            except Exception as exc:
                # Like a crashing program: the sandbox's stderr shows it, the fake keeps going.
                await write_err(f"{command.name}: {type(exc).__name__}: {exc}\n".encode())
                return 1
        return _status(result)

    return invoke


def _status(result: object) -> int:
    if result is None:
        return 0
    if isinstance(result, bool | int):
        return int(result) & 0xFF
    code = getattr(result, "exit_code", None)
    return int(code) & 0xFF if isinstance(code, int) else 1
