"""Processes of one bwrap run, found through ``/proc``, and signals to them.

bwrap (the host-side process we start) forks the sandbox's init (pid 1 of a fresh PID
namespace), which runs the command (the leader). The leader and everything below it is the
process tree the API talks about; killing init kills the whole namespace at once.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals

__all__ = ["SIGNALS", "descendants", "send"]

SIGNALS = {
    name: int(getattr(signals, name))
    for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGTERM",
                 "SIGWINCH", "SIGSTOP", "SIGCONT")
}  # fmt: skip


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def descendants(pid: int) -> list[list[int]]:
    """Descendants of ``pid`` by depth: ``[children, grandchildren, ...]``."""
    children = _children()
    levels: list[list[int]] = []
    current = [pid]
    while True:
        current = [c for p in current for c in children.get(p, ())]
        if not current:
            return levels
        levels.append(current)


def send(pids: list[int], signum: int) -> int:
    """Signal each pid that still exists; returns how many were signalled."""
    sent = 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
            sent += 1
    return sent
