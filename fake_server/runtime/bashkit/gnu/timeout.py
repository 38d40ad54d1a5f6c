"""GNU ``timeout`` on the fake's clock (bashkit's builtin measures real time).

The command runs as a child process: a fresh interpreter over the same disk with the caller's
exported environment and working directory, as an external program would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fake_server.runtime.bashkit.adapters import parse_duration
from fake_server.runtime.bashkit.runstate import RunState
from fake_server.signals import NUMBERS, TERMINATING

if TYPE_CHECKING:
    import bashkit

    from fake_server.runtime.bashkit.runstate import Sink

__all__ = ["Spawn", "timeout_command"]

Spawn = Callable[
    ["RunState", list[str], str, dict[str, str], bytes, "Sink", "Sink"], Awaitable[int]
]

_TRY = "Try 'timeout --help' for more information.\n"
_SIGNALS = {name.removeprefix("SIG"): NUMBERS[name] for name in TERMINATING}
_TIMED_OUT = 124


def _signal_number(text: str) -> int | None:
    name = text.upper().removeprefix("SIG")
    if name.isdigit():
        return int(name)
    return _SIGNALS.get(name)


def timeout_command(
    run: RunState, spawn: Spawn
) -> Callable[[bashkit.CommandContext], Awaitable[int]]:
    """``timeout [-s SIGNAL] [-k DURATION] [--preserve-status] DURATION COMMAND [ARG]...``."""

    async def timeout(ctx: bashkit.CommandContext) -> int:
        args = list(ctx.argv)
        signal = 15
        preserve = False
        while args and args[0].startswith("-") and args[0] != "-":
            option = args.pop(0)
            if option == "--":
                break
            name, _, value = option.partition("=")
            if name in ("-s", "--signal", "-k", "--kill-after") and not value:
                if not args:
                    await _usage(ctx, f"timeout: option requires an argument -- '{name}'\n")
                    return 125
                value = args.pop(0)
            if name in ("-s", "--signal"):
                number = _signal_number(value)
                if number is None:
                    await _usage(ctx, f"timeout: {value}: invalid signal\n")
                    return 125
                signal = number
            elif name == "--preserve-status":
                preserve = True
            elif name in ("-k", "--kill-after", "--foreground", "-v", "--verbose"):
                continue
            else:
                await _usage(ctx, f"timeout: unrecognized option '{option}'\n")
                return 125
        if len(args) < 2:
            await _usage(ctx, "timeout: missing operand\n")
            return 125
        seconds = parse_duration(args[0])
        if seconds is None:
            await _usage(ctx, f"timeout: invalid time interval '{args[0]}'\n")
            return 125
        stdin = b"".join([bytes(chunk) async for chunk in ctx.stdin])
        await run.settle(ctx)
        # The child counts as busy from now on, so time cannot jump between this task starting
        # to wait and the child's task first running; stop() below covers a child never run.
        child_state = RunState(run.clock, run.disk)
        child_state.start()
        command, cwd, env = args[1:], str(ctx.cwd), dict(ctx.env)
        child = asyncio.ensure_future(
            spawn(child_state, command, cwd, env, stdin, ctx.stdout.write, ctx.stderr.write)
        )
        waits: set[asyncio.Future[object]] = {child}  # type: ignore[arg-type]
        timer: asyncio.Future[None] | None = None
        if seconds > 0 and seconds != float("inf"):
            timer = asyncio.ensure_future(run.clock.sleep(seconds))
            waits.add(timer)  # type: ignore[arg-type]
        with run.waiting(), run.killed_on_cancel():
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for future in (child, timer):
                    if future is not None and not future.done():
                        future.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await future
                child_state.stop()
        if not child.cancelled():
            return int(child.result())
        if signal == 9:
            return 128 + 9
        return 128 + signal if preserve else _TIMED_OUT

    return timeout


async def _usage(ctx: bashkit.CommandContext, message: str) -> None:
    await ctx.stderr.write((message + _TRY).encode())
