"""A per-sandbox process limit: one ``pids`` cgroup per sandbox.

``RLIMIT_NPROC`` cannot hold a sandbox (its uid 0 is the host's root, which the limit does
not bind), so each sandbox gets a ``pids`` cgroup (v1 ``/sys/fs/cgroup/pids``, or v2 where
the root delegates ``pids``) allowing ``LIMIT`` processes: a fork bomb inside gets ``EAGAIN``
from ``fork`` and the fake keeps serving the other sandboxes. Every process of the sandbox
(its init and each ``nsenter``) joins the group before it runs anything (``wrap``: a shell
that writes its own pid into ``cgroup.procs``, then execs), so no child escapes it.
``close()`` kills what is left in the group and removes it; the first group a fake makes
removes the empty groups of fakes that died. Where no such cgroup can be made
(not root, no ``pids`` controller), ``serve`` says so at start-up and sandboxes run unlimited.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal as signals
import time
from pathlib import Path

__all__ = ["LIMIT", "PidsGroup", "describe", "pids_root", "sweep"]

#: Processes (threads included, as the kernel counts them) one sandbox may have at once.
LIMIT = 1024
_V1 = Path("/sys/fs/cgroup/pids")
_V2 = Path("/sys/fs/cgroup")
_JOIN = 'echo $$ > "$0" || exit 126; exec "$@"'
_REMOVE = 2.0
_counter = itertools.count(1)


@functools.cache
def pids_root() -> Path | str:
    """The directory sandbox groups are made in, or why there is none."""
    if (_V1 / "cgroup.procs").exists():
        root = _V1
    elif "pids" in _read(_V2 / "cgroup.subtree_control").split():
        root = _V2
    else:
        return "no pids cgroup controller is mounted or delegated here"
    if not os.access(root, os.W_OK):
        return f"{root} is not writable (not root)"
    return root


def describe() -> str:
    """The ``serve`` start-up line about the limit."""
    root = pids_root()
    if isinstance(root, str):
        return f"process limit: none per sandbox ({root}; a fork bomb can exhaust the host)"
    return f"process limit: {LIMIT} per sandbox (pids cgroup in {root})"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


_swept = False


def sweep(root: Path) -> list[str]:
    """Remove the groups of fakes that died (their pid is gone); their names."""
    removed = []
    for path in root.glob("createos-fake-*-*"):
        pid = path.name.split("-")[2]
        if not pid.isdigit() or int(pid) == os.getpid() or os.path.exists(f"/proc/{pid}"):
            continue
        with contextlib.suppress(OSError):  # still holding a process: left alone
            path.rmdir()
            removed.append(path.name)
    return removed


class PidsGroup:
    """One sandbox's ``pids`` cgroup (``path``), or nothing where cgroups are unavailable."""

    def __init__(self, limit: int | None = None) -> None:
        """``limit``: ``LIMIT`` unless given."""
        root = pids_root()
        self.path: Path | None = None
        if isinstance(root, Path):
            global _swept
            if not _swept:
                _swept = True
                sweep(root)
            path = root / f"createos-fake-{os.getpid()}-{next(_counter)}"
            path.mkdir()
            (path / "pids.max").write_text(f"{LIMIT if limit is None else limit}\n")
            self.path = path

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the group from its first instruction."""
        if self.path is None:
            return argv
        return ["/bin/sh", "-c", _JOIN, str(self.path / "cgroup.procs"), *argv]

    def members(self) -> list[int]:
        if self.path is None:
            return []
        return [int(pid) for pid in _read(self.path / "cgroup.procs").split()]

    def close(self) -> None:
        """SIGKILL every member, remove the group; idempotent."""
        path, self.path = self.path, None
        if path is None:
            return
        deadline = time.monotonic() + _REMOVE
        while True:
            for pid in [int(p) for p in _read(path / "cgroup.procs").split()]:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signals.SIGKILL)
            try:
                path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.005)
