"""A sandbox's shape as limits it can neither leave nor change: memory, CPU and processes.

Each sandbox gets one cgroup per controller (cgroup v1: ``/sys/fs/cgroup/<controller>``), or
one group with every controller (v2, where the root delegates them), allowing:

- memory: the shape's MiB (swap included where the kernel accounts it). A process that goes
  past it is killed by the kernel's OOM killer inside the sandbox (exit 137), as on a VM; the
  fake and the other sandboxes are untouched.
- CPU: the shape's quota, one CPU per vCPU or a share of one for a fractional shape
  (``cpu.cfs_quota_us`` or ``cpu.max``), and, where the host
  has more CPUs than the shape, a ``cpuset`` of that many (spread over the host's CPUs), so
  ``nproc`` shows the shape's vCPUs.
- processes: ``PIDS`` (threads included, as the kernel counts them); a fork bomb gets
  ``EAGAIN``.

Every process of the sandbox (its init and each exec) joins the groups before it runs
anything (``wrap``: a shell run by the fake writes its own pid into each ``cgroup.procs``,
then execs), so no child escapes them. Their files belong to the host's root: the sandbox's
root, an unprivileged id on the host (``idmap``), cannot move itself out or raise a limit, and
no cgroup file system is mounted in the sandbox (nor can one be: ``seccomp``). ``close()``
kills what is left and removes the groups; the first group a fake makes removes the empty
groups of fakes that died. Where no group can be made (not root, no controller), ``serve``
says so at start-up and sandboxes run unlimited.

``usage()`` reads the groups' CPU time and memory, which covers daemons too (the metrics).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal as signals
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PIDS", "Hierarchy", "Limits", "SandboxGroup", "describe", "hierarchy", "sweep"]

#: Processes (threads included, as the kernel counts them) one sandbox may have at once.
PIDS = 1024
#: The CFS period a vCPU's quota is a share of (microseconds).
PERIOD_US = 100_000
_ROOT = Path("/sys/fs/cgroup")
#: v1 controllers a sandbox joins (``cpuacct`` for its CPU time; ``cpuset`` only if narrowed).
_V1 = ("pids", "memory", "cpu", "cpuacct", "cpuset")
_V2 = ("pids", "memory", "cpu", "cpuset")
_JOIN = 'for p in $0; do echo $$ > "$p" || exit 126; done; exec "$@"'
_REMOVE = 2.0
#: Real seconds between tries at removing a group whose last members are exiting: doubling.
_RETRY_FIRST, _RETRY_MOST = 0.0005, 0.005
_counter = itertools.count(1)
#: The next host CPU a narrowed cpuset starts at (sandboxes spread over the host's CPUs).
_next_cpu = itertools.count()


@dataclass(frozen=True, slots=True)
class Limits:
    """What one sandbox may use: ``None`` leaves that resource unlimited."""

    vcpus: int | None = None
    memory_mib: int | None = None
    #: CPU time per period in percent of one CPU (a quarter-vCPU shape: 25); ``None``: one
    #: CPU per vCPU.
    cpu_percent: int | None = None
    #: Processes at once; ``None``: ``PIDS``.
    pids: int | None = None


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """Where sandbox groups are made: a directory per controller (the same one on v2)."""

    version: int
    dirs: dict[str, Path]

    def describe(self) -> str:
        names = ", ".join(name for name in ("memory", "cpu", "pids") if name in self.dirs)
        return f"cgroup v{self.version}: {names}"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
    except OSError:
        return False
    return True


@functools.cache
def hierarchy() -> Hierarchy | str:
    """Where this host lets the fake make sandbox groups, or why nowhere."""
    v1 = {name: _ROOT / name for name in _V1 if (_ROOT / name / "cgroup.procs").exists()}
    if "pids" in v1 or "memory" in v1:
        found = {name: path for name, path in v1.items() if os.access(path, os.W_OK)}
        if "pids" not in found and "memory" not in found:
            return f"{next(iter(v1.values()))} is not writable (not root)"
        return Hierarchy(1, found)
    controllers = _read(_ROOT / "cgroup.controllers").split()
    if not controllers:
        return "no pids or memory cgroup controller is mounted or delegated here"
    if not os.access(_ROOT, os.W_OK):
        return f"{_ROOT} is not writable (not root)"
    enabled = _read(_ROOT / "cgroup.subtree_control").split()
    for name in _V2:
        if name in controllers and name not in enabled:
            _write(_ROOT / "cgroup.subtree_control", f"+{name}\n")
    enabled = _read(_ROOT / "cgroup.subtree_control").split()
    found = {name: _ROOT for name in _V2 if name in enabled}
    if "pids" not in found and "memory" not in found:
        return "the root cgroup delegates neither pids nor memory here"
    return Hierarchy(2, found)


def describe() -> str:
    """The ``serve`` start-up line about sandboxes' limits."""
    found = hierarchy()
    if isinstance(found, str):
        return (
            f"limits: none per sandbox ({found}; a sandbox can exhaust the host's memory "
            "and processes)"
        )
    return (
        f"limits: the shape's memory and vCPUs, {PIDS} processes per sandbox ({found.describe()})"
    )


_swept = False


def sweep(root: Path) -> list[str]:
    """Remove the groups of fakes that died (their pid is gone) in ``root``; their names."""
    removed = []
    for path in root.glob("createos-fake-*-*"):
        pid = path.name.split("-")[2]
        if not pid.isdigit() or int(pid) == os.getpid() or os.path.exists(f"/proc/{pid}"):
            continue
        with contextlib.suppress(OSError):  # still holding a process: left alone
            path.rmdir()
            removed.append(path.name)
    return removed


def _cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


class SandboxGroup:
    """One sandbox's groups (``paths``), or none where cgroups are unavailable."""

    def __init__(self, limits: Limits) -> None:
        found = hierarchy()
        #: Each controller's group of this sandbox (one directory for all on v2).
        self.paths: dict[str, Path] = {}
        if isinstance(found, str):
            return
        global _swept
        if not _swept:
            _swept = True
            for root in set(found.dirs.values()):
                sweep(root)
        name = f"createos-fake-{os.getpid()}-{next(_counter)}"
        try:
            for controller, root in found.dirs.items():
                path = root / name
                if not path.exists():
                    path.mkdir()
                self.paths[controller] = path
            self._version = found.version
            self.apply(limits)
        except BaseException:
            self.close()
            raise

    @property
    def path(self) -> Path | None:
        """The ``pids`` group (where ``members`` are read), ``None`` without one."""
        return self.paths.get("pids") or next(iter(self.paths.values()), None)

    def apply(self, limits: Limits) -> None:
        """Set ``limits`` (also while processes run: a smaller memory limit reclaims first)."""
        v2 = getattr(self, "_version", 1) == 2
        if "pids" in self.paths:
            pids = PIDS if limits.pids is None else limits.pids
            (self.paths["pids"] / "pids.max").write_text(f"{pids}\n")
        memory = self.paths.get("memory")
        if memory is not None:
            size = "max" if limits.memory_mib is None else str(limits.memory_mib << 20)
            if v2:
                (memory / "memory.max").write_text(f"{size}\n")
                _write(memory / "memory.swap.max", "0\n")
            else:
                size = "-1" if limits.memory_mib is None else size
                # memsw (memory + swap) is never below memory: raise it first, lower it last
                swap = memory / "memory.memsw.limit_in_bytes"
                _write(swap, "-1\n")
                (memory / "memory.limit_in_bytes").write_text(f"{size}\n")
                _write(swap, f"{size}\n")
        cpu = self.paths.get("cpu")
        if cpu is not None:
            percent = limits.cpu_percent
            if percent is None and limits.vcpus is not None:
                percent = 100 * limits.vcpus
            quota = -1 if percent is None else percent * PERIOD_US // 100
            if v2:
                text = "max" if quota < 0 else str(quota)
                (cpu / "cpu.max").write_text(f"{text} {PERIOD_US}\n")
            else:
                (cpu / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
                (cpu / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        cpuset = self.paths.get("cpuset")
        if cpuset is not None:
            self._narrow(cpuset, limits.vcpus, v2)

    def _narrow(self, path: Path, vcpus: int | None, v2: bool) -> None:
        """A cpuset of ``vcpus`` of the host's CPUs (all of them when it has no more)."""
        cpus = _cpus()
        if vcpus is not None and vcpus < len(cpus):
            start = next(_next_cpu)
            cpus = sorted(cpus[(start + i) % len(cpus)] for i in range(vcpus))
        text = ",".join(str(cpu) for cpu in cpus)
        if not v2:  # a v1 cpuset takes no process before it has CPUs and memory nodes
            mems = _read(path.parent / "cpuset.mems").strip()
            (path / "cpuset.mems").write_text(f"{mems}\n")
        (path / "cpuset.cpus").write_text(f"{text}\n")

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the groups from its first instruction."""
        if not self.paths:
            return argv
        procs = " ".join(str(path / "cgroup.procs") for path in dict.fromkeys(self.paths.values()))
        return ["/bin/sh", "-c", _JOIN, procs, *argv]

    def members(self) -> list[int]:
        path = self.path
        if path is None:
            return []
        return [int(pid) for pid in _read(path / "cgroup.procs").split()]

    def usage(self) -> tuple[float, int] | None:
        """CPU seconds and memory bytes the sandbox's processes use, daemons included
        (page cache that can be dropped at once not counted); ``None`` without groups."""
        cpu: float | None = None
        if "cpuacct" in self.paths:
            text = _read(self.paths["cpuacct"] / "cpuacct.usage").strip()
            cpu = int(text) / 1e9 if text.isdigit() else None
        elif "cpu" in self.paths:
            stat = _stat(self.paths["cpu"] / "cpu.stat")
            cpu = stat["usage_usec"] / 1e6 if "usage_usec" in stat else None
        memory: int | None = None
        if "memory" in self.paths:
            path = self.paths["memory"]
            current = (
                _read(path / "memory.current").strip()
                or _read(path / "memory.usage_in_bytes").strip()
            )
            stat = _stat(path / "memory.stat")
            inactive = stat.get("total_inactive_file", stat.get("inactive_file", 0))
            memory = max(0, int(current) - inactive) if current.isdigit() else None
        if cpu is None and memory is None:
            return None
        return cpu or 0.0, memory or 0

    def close(self) -> None:
        """SIGKILL every member, remove the groups; idempotent."""
        paths, self.paths = self.paths, {}
        if not paths:
            return
        deadline = time.monotonic() + _REMOVE
        for path in dict.fromkeys(paths.values()):
            pause = _RETRY_FIRST
            while True:
                for pid in [int(p) for p in _read(path / "cgroup.procs").split()]:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signals.SIGKILL)
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(pause)  # its last members are still exiting: soon empty
                    pause = min(pause * 2, _RETRY_MOST)


def _stat(path: Path) -> dict[str, int]:
    """The ``name value`` lines of a cgroup's ``*.stat`` file."""
    found = {}
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            found[name] = int(value)
    return found
