"""One live process of a process-runtime sandbox: the signals the API sends it, pause and
resume of its tree, and the exit status it ends with."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal as signals
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fake_server.runtime.pipes import ProcessSignal
from fake_server.runtime.process.sandbox import tree
from fake_server.runtime.process.sandbox.realwait import Running

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Run", "exit_status"]

#: A signal sent before bwrap started the command waits for it (real seconds, tries).
_LEADER_POLL, _LEADER_TRIES = 0.002, 1000


@dataclass(slots=True)
class Run:
    """One live process of the API (``nsenter``, whose child in the sandbox runs the command)
    and the signals the API sent it."""

    pid: int
    sent: set[int] = field(default_factory=set)
    #: Whether the sandbox is paused: a tree that starts meanwhile is stopped once it runs.
    paused: bool = False
    #: Inodes of its stdout and stderr pipes: a process of the sandbox holding one of them
    #: belongs to the exec (a background job keeping them open is killed with it).
    pipes: frozenset[int] = frozenset()
    #: Every process of the sandbox (where holders of ``pipes`` are looked for).
    sandbox: Callable[[], list[int]] = list
    #: Levels of the tree above ``nsenter``'s child that only wrap it (the bwrap installing a
    #: confined sandbox's seccomp filter): signals meant for the command skip them.
    wrappers: int = 0
    #: Its real-time token: the fake's clock follows real time while it runs (``realwait``).
    running: Running = field(default_factory=lambda: Running(None))

    def signal(self, signum: int, *, tree_scope: bool, tries: int = _LEADER_TRIES) -> None:
        every = tree.descendants(self.pid)
        levels = every[self.wrappers :]
        self.sent.add(signum)
        if signum == signals.SIGKILL:
            tree.send([p for level in every for p in level], signum)
            tree.send(self.holders(), signum)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)
            return
        if tries > 0 and not _started(levels) and os.path.exists(f"/proc/{self.pid}"):
            # nsenter has not started the command yet (no leader, or one not yet past exec):
            # deliver once it has, not never.
            retry = functools.partial(self.signal, signum, tree_scope=tree_scope, tries=tries - 1)
            asyncio.get_running_loop().call_later(_LEADER_POLL, retry)
            return
        everyone = [p for level in levels for p in level]
        if tree_scope:  # a background job holding the output belongs to the exec's tree
            everyone += [p for p in self.holders() if p not in everyone]
        pids = everyone if tree_scope else levels[0][:1] if levels else []
        tree.send(pids, signum)

    def stop(self, signum: int, tries: int = _LEADER_TRIES) -> None:
        """SIGSTOP/SIGCONT every process of the tree (pause and resume).

        A tree whose command has not started yet is stopped once it has, unless the sandbox
        was resumed meanwhile.
        """
        self.paused = signum == signals.SIGSTOP
        if self.paused:
            self.running.stop()  # a stopped program does not run: time may jump again
        else:
            self.running.start()
        levels = tree.descendants(self.pid)
        if self.paused:
            # nsenter (the tree's root, or its first level under the bwrap) is stopped
            # before its child, continued after it (``tree.stop_first``)
            if self.wrappers:
                for pid in levels[0] if levels else ():
                    tree.stop_first(pid)
            else:
                tree.stop_first(self.pid)
            for level in levels:
                tree.send(level, signum)
        else:
            for level in tree.continuing(levels):
                tree.send(level, signum)
            tree.send([self.pid], signum)
        if self.paused and tries > 0 and not _started(levels[self.wrappers :]):
            asyncio.get_running_loop().call_later(_LEADER_POLL, self._stop_later, tries - 1)

    def _stop_later(self, tries: int) -> None:
        if self.paused and os.path.exists(f"/proc/{self.pid}"):
            self.stop(signals.SIGSTOP, tries)

    def holders(self) -> list[int]:
        """The sandbox's processes holding its output pipes."""
        return tree.holding(self.sandbox(), self.pipes)


def _started(levels: list[list[int]]) -> bool:
    """Whether the leader exists and runs the command (no longer a copy of nsenter)."""
    if not levels:
        return False
    try:
        with open(f"/proc/{levels[0][0]}/cmdline", "rb") as handle:
            program = handle.read().split(b"\0", 1)[0]
    except OSError:
        return True  # gone already: nothing left to wait for
    return not program.endswith(b"nsenter")


def exit_status(code: int, run: Run, missing: bool) -> int:
    """The status ``code`` reports (``missing``: nsenter could not start the command), or
    ``ProcessSignal`` when a signal the API sent ended it."""
    signum = -code if code < 0 else code - 128 if code > 128 else 0
    if signum and signum in run.sent:
        raise ProcessSignal(signals.Signals(signum).name)
    if code < 0:
        return 128 + signum
    if missing and code == 1:
        return 127
    return code & 0xFF
