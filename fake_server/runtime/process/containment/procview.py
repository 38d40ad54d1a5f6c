"""The shape as ``/proc`` tells it: ``free``, ``top`` and ``uptime`` read the sandbox's own
figures, through lxcfs.

A VM's ``/proc/meminfo`` is the VM's memory; a sandbox's ``/proc`` is the host kernel's, so
``free`` would show the host's gigabytes whatever the shape. lxcfs (the FUSE file system LXC
and Incus use for exactly this) answers a read of its ``proc`` files from the reading
process's cgroups: ``MemTotal`` is the sandbox's memory limit, the CPUs of ``cpuinfo`` and
``stat`` its cpuset and quota, ``uptime`` its init's. One lxcfs per fake process is mounted in
the fake's scratch directory before the image's mount namespace is made (that namespace copies
the host's mounts once, privately), and each sandbox's init binds those files over its
``/proc`` (``binds``).

Where lxcfs cannot run (not installed, no ``/dev/fuse``, not root), ``/proc`` is the host's and
``serve`` says so; the memory limit itself holds either way (``cgroups``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from typing import TYPE_CHECKING

from fake_server.runtime.process.containment.mountns import unmount

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["FILES", "ProcView", "describe", "unavailable", "unmount_under"]

#: The files of ``/proc`` lxcfs answers per cgroup (``loadavg`` would need its own thread).
FILES = ("meminfo", "cpuinfo", "stat", "uptime", "swaps", "diskstats")
#: Real seconds lxcfs gets to mount itself.
START_BOUND = 10.0


def unavailable() -> str | None:
    """Why no lxcfs can serve sandboxes here, or ``None``."""
    if shutil.which("lxcfs") is None:
        return "lxcfs is not installed (apt-get install lxcfs)"
    if os.geteuid() != 0:
        return "mounting lxcfs needs root"
    if not os.path.exists("/dev/fuse"):
        return "this machine has no /dev/fuse"
    return None


def describe() -> str:
    """``serve``'s start-up line about what ``free`` and ``top`` show in a sandbox."""
    why = unavailable()
    if why is None:
        return "proc: free, top and uptime show the sandbox's shape (lxcfs)"
    return f"proc: free and top show the host's memory and CPUs ({why})"


class ProcView:
    """One running lxcfs, mounted at ``directory`` (raises ``OSError`` saying why not)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(mode=0o755, exist_ok=True)
        program = shutil.which("lxcfs")
        if program is None:
            raise OSError("lxcfs is not installed")
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [program, "--foreground", f"--pidfile={directory}.pid", "--enable-cfs", directory],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C for the fake is not lxcfs's: close() stops it
        )
        deadline = time.monotonic() + START_BOUND
        while not os.path.exists(directory / "proc" / "meminfo"):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise OSError("lxcfs did not mount its file system")
            time.sleep(0.002)

    def binds(self) -> list[str]:
        """bwrap's options binding lxcfs's files over ``/proc``'s (after ``--proc``)."""
        argv: list[str] = []
        for name in FILES:
            source = self.directory / "proc" / name
            if os.path.exists(source):
                argv += ["--ro-bind", str(source), f"/proc/{name}"]
        return argv

    def close(self) -> None:
        """Stop lxcfs (it unmounts itself on SIGTERM; a mount left behind is detached)."""
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
        unmount_under(self.directory)
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)


def unmount_under(directory: Path) -> int:
    """Detach every mount at or below ``directory`` (an lxcfs whose fake was killed leaves its
    mount, unreadable, in the way of removing the directory); returns how many."""
    prefix = os.fsencode(directory)
    found = []
    with open("/proc/self/mountinfo", "rb") as handle:
        for line in handle:
            point = line.split(b" ")[4].replace(b"\\040", b" ")
            if point == prefix or point.startswith(prefix + b"/"):
                found.append(point)
    detached = 0
    for point in sorted(found, key=len, reverse=True):
        with contextlib.suppress(OSError):
            unmount(os.fsdecode(point))
            detached += 1
    return detached
