"""A sandbox's init: one long-lived PID namespace per sandbox, which every process enters.

A VM's processes outlive the command that started them: a daemon started by one exec
(``nohup setsid CMD >/tmp/log 2>&1 &``) runs until the VM goes, and ``ps`` shows every
process of the VM. So each sandbox gets one bwrap (user, PID, mount, IPC and UTS namespaces)
whose pid 1 lives as long as the sandbox: ``/bin/sh`` reaping orphans in a loop (the kernel
shields pid 1 from signals sent inside its namespace, so ``kill -9 -1`` or ``pkill sh`` in the
sandbox cannot end it). Every exec and managed process then enters those namespaces with
``nsenter`` instead of starting a bwrap of its own; what it leaves behind is reparented to that
pid 1 and keeps running.

The init starts with the sandbox's first process, not at create (a sandbox nobody runs
anything in costs no process). ``close()`` (destroy, reset, the fake's shutdown) sends every
process of the sandbox SIGTERM, waits up to ``GRACE`` real seconds, then SIGKILLs pid 1: the
kernel kills whatever is left in the namespace, a daemon that ignores SIGTERM included. The
init's bwrap runs with ``--die-with-parent``, so a fake that dies takes its sandboxes along.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals
import subprocess
from typing import TYPE_CHECKING

from fake_server.runtime.process.containment import confine
from fake_server.runtime.process.sandbox import tree
from fake_server.runtime.process.sandbox.spawn import make_pipes

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from fake_server.runtime.process.containment.confine import Handoff
    from fake_server.runtime.process.containment.idmap import IdRange, Nested, OwnId, Subordinate

__all__ = ["GRACE", "INIT", "Guest"]

#: pid 1's program: tell the fake it runs, drop the fake's pipes, reap orphans forever.
INIT = "echo ready; exec </dev/null >/dev/null 2>&1; while :; do sleep 2147483647 & wait; done"
#: Real seconds destroy waits for processes to end on SIGTERM before it kills them.
GRACE = 0.2
#: Real seconds destroy waits for the init's bwrap to be reaped (milliseconds in practice).
_REAP = 5.0


class Guest:
    """The sandbox's init (``pid``, a host pid), started on first use by ``start``."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._starting: asyncio.Task[int] | None = None
        self.pid: int | None = None
        self._closed = False

    async def start(
        self,
        argv: Callable[[Handoff | None], list[str]],
        ids: IdRange | Subordinate | OwnId | Nested | None = None,
        *,
        with_filter: bool = True,
        ignore_chown: bool = False,
    ) -> int:
        """The init's host pid; the first call starts it with ``argv(handoff)`` (bwrap's argv).

        With ``ids`` the init makes a user namespace the fake maps onto ``ids`` before it goes
        on (``confine``: ``handoff`` names the descriptors it gets, the seccomp filter too
        ``with_filter``, with its ``chown`` rules ``ignore_chown``); without, ``handoff`` is
        ``None`` and bwrap maps one id itself."""
        if self.pid is not None:
            return self.pid
        if self._closed:
            raise RuntimeError("the sandbox was destroyed")
        if self._starting is None:
            starting = self._start(argv, ids, with_filter, ignore_chown)
            self._starting = asyncio.ensure_future(starting)
        try:
            return await asyncio.shield(self._starting)
        except BaseException:
            if self._starting.done():
                self._starting = None  # a failed start is tried again by the next process
            raise

    async def _start(
        self,
        make_argv: Callable[[Handoff | None], list[str]],
        ids: IdRange | Subordinate | OwnId | Nested | None,
        with_filter: bool,
        ignore_chown: bool,
    ) -> int:
        pipes, ends = await make_pipes()
        handoff, block, info = (
            confine.handoff(with_filter=with_filter, ignore_chown=ignore_chown)
            if ids is not None
            else (None, -1, -1)
        )
        try:
            # Popen, not asyncio: the fake reaps it itself at close, whether a loop runs or not
            # (fork and exec block as long as in asyncio's own subprocess start)
            proc = subprocess.Popen(  # noqa: ASYNC220
                make_argv(handoff),
                stdin=subprocess.DEVNULL,
                stdout=ends[0],
                stderr=ends[1],
                start_new_session=True,
                env={},
                pass_fds=handoff.fds if handoff is not None else (),
            )
        except BaseException:
            pipes.close()
            for fd in (block, info):
                if fd >= 0:
                    os.close(fd)
            raise
        finally:
            for fd in [*ends, *(handoff.fds if handoff is not None else ())]:
                os.close(fd)
        self._proc = proc
        try:
            mapped = True
            if ids is not None:
                try:
                    await confine.map_when_ready(info, block, ids)
                except OSError:  # bwrap failed first (its message is on stderr), or the map
                    mapped = False
                    self._kill()
            line = await pipes.stdout.readline() if mapped else b""
            if line != b"ready\n":
                error = (await pipes.stderr.read()).decode(errors="replace").strip().splitlines()
                self._kill()
                detail = error[-1][:200] if error else "it exited at once"
                raise OSError(f"the sandbox's init did not start: {detail}")
        finally:
            pipes.close()  # pid 1 left them; bwrap writes nothing more
        children = tree.descendants(proc.pid)
        if self._closed or not children:  # destroyed meanwhile, or died at once
            self._kill()
            raise RuntimeError("the sandbox was destroyed")
        self.pid = children[0][0]
        return self.pid

    def processes(self, also: Iterable[int] = ()) -> list[int]:
        """Every process of the sandbox but pid 1: its descendants, and those of ``also``
        (the ``nsenter`` of each live exec, whose children are in the namespace)."""
        found: list[int] = []
        roots = [self.pid] if self.pid is not None else []
        for root in [*roots, *also]:
            found.extend(pid for level in tree.descendants(root) for pid in level)
        return found

    def host_pids(self) -> list[int]:
        """The init's bwrap and pid 1 (``processes()`` has the rest)."""
        if self._proc is None or self.pid is None:
            return []
        return [self._proc.pid, self.pid]

    def send(self, signum: int, also: Iterable[int] = ()) -> None:
        """Send ``signum`` to every process of the sandbox but pid 1 (pause, resume).

        SIGCONT goes to children before their parents (``continuing``)."""
        pids = self.processes(also)
        tree.send(tree.continuing(pids) if signum == signals.SIGCONT else pids, signum)

    def close(self, also: Iterable[int] = ()) -> None:
        """SIGTERM everything, SIGKILL what is left after ``GRACE``; idempotent."""
        self._closed = True
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        pids = [*also, *self.processes(also)] if self.pid is not None else list(also)
        if pids and tree.send(pids, signals.SIGTERM):
            tree.send(pids, signals.SIGCONT)  # a paused sandbox's processes must see it
            tree.wait_gone(pids, GRACE)
        tree.send(pids, signals.SIGKILL)
        self._kill()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if self.pid is not None:
            tree.send([self.pid], signals.SIGKILL)  # the kernel kills the whole namespace
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signals.SIGKILL)
            tree.wait_gone([proc.pid], _REAP)  # bwrap goes once the namespace is empty
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(0)
