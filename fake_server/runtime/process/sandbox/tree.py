"""Processes of a sandbox, found through ``/proc``, and signals to them.

Each exec is an ``nsenter`` (the host-side process we start) whose child, in the sandbox's
namespaces, runs the command (the leader). The leader and everything below it is the process
tree the API talks about; what it left behind was reparented to the sandbox's init
(``guest``), and killing that init kills the whole namespace at once.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal as signals
import time
from typing import TYPE_CHECKING, TypeVar

from fake_server.signals import NUMBERS

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "SIGNALS", "continuing", "descendants", "holding", "send", "state", "stop_first", "wait_gone",
]  # fmt: skip

_T = TypeVar("_T")

SIGNALS = NUMBERS


#: Real seconds ``stop_first`` waits for an ``nsenter`` to stop (it is woken by the signal
#: and stops at once, unless the machine is too busy to run it).
STOP_BOUND = 2.0
#: Real seconds between looks at the processes ``wait_gone`` waits for, where pidfds are missing.
_POLL = 0.005


def continuing(top_down: Sequence[_T]) -> list[_T]:
    """Processes (or levels of them) listed parents first, in the order SIGCONT goes: children
    first (``stop_first`` says why)."""
    return list(reversed(top_down))


def stop_first(pid: int) -> None:
    """SIGSTOP ``pid`` (an ``nsenter``) and wait until it has stopped, before its child is.

    ``nsenter`` waits for its child with ``WUNTRACED`` and, when it sees it stopped, stops
    itself, then continues the child once continued. A signal stops a process only when it
    next runs: an ``nsenter`` still running when its child stopped could take the child's stop
    and be stopped by our signal just before stopping itself, which it then does once resumed,
    for good (its exec would never end). Stopped first, it never sees the child stopped: the
    child is continued before it (``continuing``), which clears the stop it could have seen.
    """
    if not send([pid], signals.SIGSTOP):
        return
    deadline = time.monotonic() + STOP_BOUND
    while state(pid) not in ("T", "t", "Z", "X", "") and time.monotonic() < deadline:
        time.sleep(0.0002)


def state(pid: int) -> str:
    """``pid``'s state letter (``/proc/PID/stat``), ``""`` once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return ""
    return data[data.rfind(b")") + 2 :][:1].decode()


def wait_gone(pids: Sequence[int], timeout: float) -> bool:
    """Wait at most ``timeout`` real seconds for every process of ``pids`` to end (a zombie has
    ended); whether none is left.

    Each process is watched through a pidfd, so the wait ends when the last one does rather
    than at a poll's next tick; a kernel without pidfds (before 5.3) is polled.
    """
    deadline = time.monotonic() + timeout
    fds: list[int] = []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:
                continue
            except OSError:
                return _poll_gone(pids, deadline)
        watch = select.poll()
        for fd in fds:
            watch.register(fd, select.POLLIN)
        left = len(fds)
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            for fd, _ in watch.poll(math.ceil(remaining * 1000)):
                watch.unregister(fd)
                left -= 1
        return True
    finally:
        for fd in fds:
            os.close(fd)


def _poll_gone(pids: Sequence[int], deadline: float) -> bool:
    while any(state(pid) not in ("", "Z") for pid in pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL)
    return True


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


def _children_of(pid: int) -> list[int] | None:
    """``pid``'s children from ``/proc/PID/task/*/children``; ``None`` where the kernel lacks
    that file (then the whole of ``/proc`` is scanned instead)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found  # gone meanwhile
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found.extend(int(child) for child in handle.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{task}"):
                continue  # the thread ended
            return None
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[list[int]]:
    """Descendants of ``pid`` by depth: ``[children, grandchildren, ...]``.

    Walks the tree through each process's ``children`` file: the cost grows with the tree,
    not with every process on the host (pause and resume of a sandbox stay fast on a busy
    machine).
    """
    levels: list[list[int]] = []
    current = [pid]
    while True:
        below: list[int] = []
        for parent in current:
            children = _children_of(parent)
            if children is None:
                return _scan(pid)
            below.extend(children)
        if not below:
            return levels
        levels.append(below)
        current = below


def _scan(pid: int) -> list[list[int]]:
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


def holding(pids: list[int], inodes: frozenset[int]) -> list[int]:
    """The processes among ``pids`` with a descriptor on one of the pipes ``inodes``."""
    if not inodes:
        return []
    names = {f"pipe:[{inode}]" for inode in inodes}
    found = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in names:
                    found.append(pid)
                    break
            except OSError:
                continue
    return found
