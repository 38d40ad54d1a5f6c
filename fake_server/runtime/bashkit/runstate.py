"""Per-run bookkeeping shared by the shell and its custom commands.

bashkit runs an async custom command in a task of its own, not in the task that awaits
``Bash.execute()``. A busy token held by the awaiting task would therefore stop a virtual clock
from ever jumping while ``sleep`` waits. ``RunState`` owns that token explicitly and hands it
back whenever a custom command waits (sleep, stdin, a registered command), whatever task it is
in.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    import bashkit

    from fake_server.clock import Clock, Hold
    from fake_server.runtime.bashkit.disk import SandboxDisk
    from fake_server.runtime.terminal import Terminal

__all__ = ["RunState", "Sink"]

Sink = Callable[[bytes], Awaitable[None]]


class RunState:
    """Busy accounting and signal disposition of one ``Shell.run()``."""

    def __init__(self, clock: Clock, disk: SandboxDisk) -> None:
        self.clock = clock
        self.disk = disk
        self._token: Hold | None = None
        self._waiting = 0
        self._active = False
        self._ignoring_sigterm = 0
        self._interpreters: list[Callable[[], None]] = []
        self.killed = False
        #: Set when the process's own command has ended: its stdin feeder stops reading then.
        self.leader_done = asyncio.Event()
        self._in_flight = 0
        self._drained = asyncio.Event()
        self._drained.set()
        #: The PTY's window when the process runs on one (``stty`` reads it).
        self.terminal: Terminal | None = None

    @contextlib.contextmanager
    def interpreter(self, stop: Callable[[], None]) -> Iterator[None]:
        """While an interpreter of this run works, ``kill()`` calls ``stop`` (``Bash.cancel``).

        The reference is dropped when the block ends. It must be: the interpreter holds this
        state through its custom commands, and a cycle through a bashkit object is invisible
        to Python's collector, so the interpreter (3 file descriptors) and the disk it mounts
        would never be freed. Nested runs (``timeout``'s child) stack their interpreters.
        """
        self._interpreters.append(stop)
        try:
            yield
        finally:
            self._interpreters.remove(stop)

    def kill(self) -> None:
        """The process was killed: stop the interpreter before it runs one more command.

        bashkit keeps executing a script on its own threads after the awaiting task is
        cancelled; without this, the commands after an interrupted ``sleep`` would still run.
        """
        self.killed = True
        for stop in list(self._interpreters):
            stop()

    def track(self, sink: Sink) -> Sink:
        """Wrap an output sink so ``settle()`` can wait for deliveries in progress."""

        async def deliver(data: bytes) -> None:
            self._in_flight += 1
            self._drained.clear()
            try:
                await sink(data)
            finally:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._drained.set()

        return deliver

    async def settle(self, ctx: bashkit.CommandContext) -> None:
        """Let output written before this command reach the owner before time may jump.

        bashkit hands output to the sinks from its own threads, concurrently with starting a
        custom command; without this a ``VirtualClock`` could jump over a ``sleep`` before the
        ``echo`` that preceded it was recorded. An empty write queues behind earlier output.
        """
        await ctx.stdout.write(b"")
        await ctx.stderr.write(b"")
        for _ in range(2):
            await asyncio.sleep(0)
        while self._in_flight:
            await self._drained.wait()

    def start(self) -> None:
        """The interpreter starts working: time must not jump until it waits."""
        self._active = True
        self._acquire()

    def stop(self) -> None:
        self._active = False
        self._release()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """The interpreter is blocked in a custom command; time may jump meanwhile."""
        self._waiting += 1
        self._release()
        try:
            yield
        finally:
            self._waiting -= 1
            if self._waiting == 0 and self._active:
                self._acquire()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A waiting command reads input the run itself produces: the run works meanwhile.

        Within ``waiting()``. Input already inside the sandbox (none at all, buffered stdin,
        another stage's output) reaches the command through bashkit's threads without any
        fake time passing, so time may jump only while some other command of the run waits
        (a ``sleep`` upstream, live stdin from outside).
        """
        self._waiting -= 1
        if self._waiting == 0 and self._active:
            self._acquire()
        try:
            yield
        finally:
            self._waiting += 1
            self._release()

    @contextlib.contextmanager
    def killed_on_cancel(self) -> Iterator[None]:
        """A custom command interrupted by cancellation means the process is being killed."""
        try:
            yield
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                self.kill()
            raise

    @contextlib.contextmanager
    def ignoring_sigterm(self, ignores: bool) -> Iterator[None]:
        """While a command that ignores SIGTERM runs, the process survives SIGTERM."""
        self._ignoring_sigterm += int(ignores)
        try:
            yield
        finally:
            self._ignoring_sigterm -= int(ignores)

    @property
    def ignores_sigterm(self) -> bool:
        return self._ignoring_sigterm > 0

    def _acquire(self) -> None:
        # A hold, not ``busy()``: the token is handed between bashkit's tasks explicitly, and a
        # ``clock.idle()`` in whichever task happens to run must not drop it.
        if self._token is None:
            self._token = self.clock.hold()

    def _release(self) -> None:
        token, self._token = self._token, None
        if token is not None:
            token.release()
