"""A managed process: a shell task, its output journal, stdin pipe, exit status and signals.

Processes keep running while their sandbox is paused (the fake does not freeze tasks; the real
VM freezes and resumes them, which looks the same to a client that only polls after resume).
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fake_server import signals
from fake_server.models.errors import Conflict, Gone
from fake_server.models.output import OutputFrame, OutputJournal
from fake_server.models.waiting import Wakeup, wait_event
from fake_server.runtime.environment import HOME
from fake_server.runtime.terminal import Terminal

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Coroutine

    from fake_server.clock import Clock, Hold
    from fake_server.runtime import StdinPipe
    from fake_server.runtime.api import Runner

#: Real seconds bulk output gathers before readers wake (only while pieces keep coming).
_GATHER_SECONDS = 0.002

__all__ = ["ExitFrame", "ExpiredFrame", "HeartbeatFrame", "Process", "ProcessSpec"]

#: Signals that end a process; the rest (SIGWINCH) are accepted and ignored.
TERMINATING_SIGNALS = frozenset(signals.TERMINATING)
KNOWN_SIGNALS = frozenset(signals.KNOWN)


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """What to run: validated create-request fields."""

    cmd: str
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    pty: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatFrame:
    pass


@dataclass(frozen=True, slots=True)
class ExitFrame:
    exit_code: int | None
    signal: str | None


@dataclass(frozen=True, slots=True)
class ExpiredFrame:
    oldest_available_seq: int


Frame = OutputFrame | HeartbeatFrame | ExitFrame | ExpiredFrame


class Process:
    """One managed process. All methods run on the fake's event loop."""

    def __init__(
        self,
        *,
        process_id: str,
        pid: int,
        spec: ProcessSpec,
        created_at: float,
        clock: Clock,
        stdin: StdinPipe,
        home: str = HOME,
        on_exit: Callable[[Process], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_held_open: Callable[[str], None] | None = None,
    ) -> None:
        self.process_id = process_id
        self.pid = pid
        self.spec = spec
        #: Where it runs: its ``cwd``, or its sandbox's home when it gave none.
        self.cwd = spec.cwd or home
        self.kind = "pty" if spec.pty else "process"
        #: A PTY's window (``…/resize`` changes it; the runtime passes it on to the program).
        self.terminal = Terminal(*spec.pty) if spec.pty else None
        self.created_at = created_at
        self.clock = clock
        self.stdin = stdin
        self.state = "starting"
        self.leader_exited = False
        self.tree_exited = False
        self.finished_at: float | None = None
        self.exit_code: int | None = None
        self.signal: str | None = None
        self.output = OutputJournal()
        self.input_seq = 0
        #: Whether a client closed stdin (the pipe also closes when the process exits).
        self._stdin_closed_by_client = False
        self.task: asyncio.Task[None] | None = None
        self._changed = Wakeup(self.clock)
        self._exited = Wakeup(self.clock)
        self._kill_signal: str | None = None
        self._on_exit = on_exit
        self._on_error = on_error
        #: Told why the process has not ended when its program exited but a process it left
        #: keeps its output open (the process runtime's ``heldopen``): the journal keeps it.
        self._on_held_open = on_held_open
        self._shell: Runner | None = None
        #: Held while bulk output waits to be announced to readers (see ``_emit``).
        self._flush: Hold | None = None

    @property
    def pty_size(self) -> tuple[int, int] | None:
        """``(rows, cols)`` of a PTY, ``None`` for a plain process."""
        return None if self.terminal is None else self.terminal.size

    def resize(self, rows: int, cols: int) -> None:
        if self.terminal is not None:
            self.terminal.resize(rows, cols)

    # -- running ------------------------------------------------------------------------------

    def start(self, shell: Runner, env: dict[str, str]) -> None:
        self._shell = shell
        # Busy from now until the interpreter holds its own token: the new task only runs on
        # a later loop iteration, and a virtual clock must not jump in between.
        bridge = self.clock.hold()
        self.task = asyncio.get_running_loop().create_task(
            self._run(shell, env, bridge), name=f"createos-fake {self.process_id}"
        )
        # A task cancelled before its first step never enters ``_run``: record the exit anyway.
        self.task.add_done_callback(lambda _: bridge.release())
        self.task.add_done_callback(lambda _: self._finish(None, self._kill_signal or "SIGKILL"))

    async def _run(self, shell: Runner, env: dict[str, str], bridge: Hold) -> None:
        from fake_server.runtime import CapacityError, CommandNotStarted, ProcessSignal

        out_stream = "pty" if self.kind == "pty" else "stdout"
        err_stream = "pty" if self.kind == "pty" else "stderr"

        async def on_stdout(data: bytes) -> None:
            self._emit(out_stream, data)

        async def on_stderr(data: bytes) -> None:
            self._emit(err_stream, data)

        # No busy token here: the runtime holds one while the interpreter works.
        self.state = "running"
        try:
            code = await shell.run(
                [self.spec.cmd, *self.spec.args],
                cwd=self.spec.cwd,
                env=env,
                stdin=self.stdin,
                on_stdout=on_stdout,
                on_stderr=on_stderr,
                started=bridge.release,
                terminal=self.terminal,
                held_open=self._on_held_open,
            )
        except asyncio.CancelledError:
            self._finish(None, self._kill_signal or "SIGKILL")
        except ProcessSignal as exc:
            self._finish(None, exc.signal)
        except CommandNotStarted as exc:  # no error field on a process: say it on stderr
            self._emit(err_stream, f"{exc.error}\n".encode())
            self._finish(exc.exit_code, None, state="failed")
        except FileNotFoundError:
            self._emit(err_stream, b"bash: cd: No such file or directory\n")
            self._finish(1, None, state="failed")
        except CapacityError as exc:  # checked at creation; only a race gets here
            self._emit(err_stream, f"createos-fake: {exc.strerror}\n".encode())
            self._finish(1, None, state="failed")
        except Exception:
            # A bug in the fake or its runtime: fail the process, and the test through errors.
            if self._on_error is not None:
                self._on_error(traceback.format_exc())
            self._finish(None, None, state="failed")
        else:
            self._finish(code, None)

    def _emit(self, stream: str, data: bytes, *, merge: bool = True) -> None:
        if not data or self.tree_exited:
            return
        self.output.append(stream, data, merge=merge)
        if not (merge and self.output.growing):
            self._notify()
        elif self._flush is None:
            # Bulk output arrives from bashkit in 4 KiB pieces, one thread hop each: let the
            # next pieces join this frame for a moment before waking readers. The hold keeps a
            # virtual clock still meanwhile.
            self._flush = self.clock.hold()
            asyncio.get_running_loop().call_later(_GATHER_SECONDS, self._notify_pending)

    def _notify_pending(self) -> None:
        if self._flush is not None:
            self._notify()

    def _notify(self) -> None:
        hold, self._flush = self._flush, None
        changed, self._changed = self._changed, Wakeup(self.clock)
        changed.set()
        if hold is not None:
            hold.release()

    def _finish(self, exit_code: int | None, signal: str | None, *, state: str = "exited") -> None:
        if self.tree_exited:
            return
        self.exit_code = exit_code
        self.signal = signal
        self.state = state
        self.leader_exited = self.tree_exited = True
        self.finished_at = self.clock.time()
        with contextlib.suppress(Exception):
            self.stdin.close()
        self._exited.set()
        self._notify()
        if self._on_exit is not None:
            self._on_exit(self)

    # -- control ------------------------------------------------------------------------------

    def write_input(self, data: bytes) -> int:
        if self.tree_exited:
            raise Conflict("process has exited", code="process_exited")
        if self.stdin.closed:
            raise Conflict("stdin is closed", code="stdin_closed")
        self.stdin.write(data)
        self.input_seq += 1
        return self.input_seq

    def close_stdin(self) -> None:
        if self.kind == "pty":
            raise Conflict("a pty has no separate stdin to close", code="pty_stdin")
        # Only a second close is refused. Closing the pipe's write end after the process
        # exited succeeds, as close(2) does: whether a process that never reads stdin has
        # already exited when the client closes it is a race of real time, and the answer
        # must not depend on it (same seed, same journal).
        if self._stdin_closed_by_client:
            raise Conflict("stdin is already closed", code="stdin_closed")
        self._stdin_closed_by_client = True
        self.stdin.close()

    def crash(self, signal: str = "SIGKILL") -> None:
        """End the process at once, as if the kernel killed it (fault hook)."""
        self._finish(None, signal)
        self._cancel(signal)

    def _ignores_sigterm(self) -> bool:
        """Whether the command running now shrugs off SIGTERM (a registered command may)."""
        if self._shell is None or self.task is None:
            return False
        return self._shell.sigterm_ignored(self.task)

    def _real_signal(self, signal: str, *, tree: bool) -> bool:
        """Deliver a real signal (process runtime); False when the runtime emulates signals."""
        if self._shell is None or self.task is None or self.task.done():
            return False
        return self._shell.signal(self.task, signal, tree=tree)

    def _cancel(self, signal: str) -> None:
        self._kill_signal = signal
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def send_signal(self, signal: str) -> None:
        if self.tree_exited:
            raise Conflict("process has exited", code="process_exited")
        if self._real_signal(signal, tree=False):
            return  # a real process decides itself whether the signal ends it
        if signal not in TERMINATING_SIGNALS:
            return
        if signal == "SIGTERM" and self._ignores_sigterm():
            return
        self.state = "terminating"
        self._cancel(signal)
        await self._settled()

    async def kill(self, grace: float) -> None:
        """SIGTERM, then SIGKILL once ``grace`` fake seconds pass without an exit."""
        if self.tree_exited:
            return
        self.state = "terminating"
        if self._real_signal("SIGTERM", tree=True):
            if not await wait_event(self.clock, self._exited, grace):
                self._real_signal("SIGKILL", tree=True)
        elif self._ignores_sigterm():
            if not await wait_event(self.clock, self._exited, grace):
                self._cancel("SIGKILL")
        else:
            self._cancel("SIGTERM")
        await self._settled()

    async def _settled(self) -> None:
        task = self.task
        if task is not None and not task.done():
            # The exit is recorded just before the task ends; waiting on it (not on the task)
            # keeps a virtual clock still across the hand-off back to this handler.
            await wait_event(self.clock, self._exited, None)
            with self.clock.idle():
                await asyncio.wait({task})

    async def wait_exit(self, timeout: float) -> bool:
        return await wait_event(self.clock, self._exited, timeout)

    def write_output(self, stream: str, data: bytes) -> None:
        """Journal output as if the process wrote it, in frames of its own (fault and test hook)."""
        self._emit(stream, data, merge=False)

    def evict_output(self, up_to_seq: int | None = None) -> None:
        """Drop journaled output (fault hook); live readers behind it get an expiry frame."""
        self.output.evict(up_to_seq)
        self._notify()

    # -- reading ------------------------------------------------------------------------------

    def changed(self) -> Coroutine[Any, Any, None]:
        """Completes at the next output, eviction or exit after this call (not after the
        first await), for observers (the dashboard) that must not hold a virtual clock still:
        unlike ``follow()``, waiting on it takes no hold."""
        return self._changed.wait()

    async def follow(self, after: int, heartbeat: float) -> AsyncGenerator[Frame, None]:
        """Replay frames after ``after``, then live frames, then one exit frame."""
        if after < 0:
            raise Gone("output cursor must be >= 0")
        if self.output.expired(after):
            raise Gone("requested output was evicted")
        cursor = after
        while True:
            changed = self._changed
            if self.output.expired(cursor):
                yield ExpiredFrame(self.output.oldest_seq)
                return
            for frame in self.output.after(cursor):
                yield frame
                cursor = frame.seq
            if self.tree_exited and cursor >= self.output.newest_seq:
                yield ExitFrame(self.exit_code, self.signal)
                return
            if changed is not self._changed:
                continue
            if not await wait_event(self.clock, changed, heartbeat):
                yield HeartbeatFrame()
