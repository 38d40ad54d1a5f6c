"""The host ids of a sandbox's users: 65,536 ids of a range of the fake's own, never the host's.

Run as root, the fake gives every sandbox a user namespace whose ids 0-65535 are host ids
``base``-``base``+65535 (``IdRange``): root in a sandbox is an unprivileged id on the host, so
``/proc/sys``, ``/proc/sysrq-trigger``, cgroup files and every root-owned host file stay out
of its reach, while ``apt`` (which drops to ``_apt``), ``useradd`` and ``chown`` work inside as
on a VM. The range starts at ``DEFAULT_BASE``, moved past any range ``/etc/subuid`` or
``/etc/subgid`` hands out and any id ``/etc/passwd`` names, so it is the same at every start
on one host (a state directory's files keep their owners).

The image's files (the host's, owned by host root) are shown through idmapped mounts
(``mountns.idmapped``) with this map, so they belong to root inside; files the fake itself
creates in a sandbox are given to ``base`` (``owner``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
from dataclasses import dataclass

__all__ = ["DEFAULT_BASE", "SIZE", "IdRange", "host_range", "map_user_namespace", "userns"]

#: Ids a sandbox has (0-65535, as on a VM: nobody is 65534).
SIZE = 65536
#: Where the range starts unless a host range is in the way (a multiple of ``SIZE``).
DEFAULT_BASE = 15_000 * SIZE
_FILES = ("/etc/subuid", "/etc/subgid")


@dataclass(frozen=True, slots=True)
class IdRange:
    """Host ids ``base`` to ``base + size - 1``: a sandbox's 0 to ``size - 1``."""

    base: int
    size: int = SIZE

    @property
    def owner(self) -> tuple[int, int]:
        """The host uid and gid of the sandbox's root."""
        return self.base, self.base

    def map_line(self) -> str:
        """A ``uid_map``/``gid_map`` line giving a namespace this range."""
        return f"0 {self.base} {self.size}\n"


def _lines(name: str) -> list[list[str]]:
    """The colon-separated fields of each line of ``name`` (none when it cannot be read)."""
    try:
        with open(name, encoding="utf-8", errors="replace") as handle:
            return [line.rstrip("\n").split(":") for line in handle]
    except OSError:
        return []


def _taken() -> list[tuple[int, int]]:
    """Host id ranges in use: subordinate ranges and the ids of ``/etc/passwd``/``group``."""
    taken = []
    for name in _FILES:
        for fields in _lines(name):
            if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
                taken.append((int(fields[1]), int(fields[1]) + int(fields[2])))
    for name in ("/etc/passwd", "/etc/group"):
        for fields in _lines(name):
            if len(fields) > 2 and fields[2].isdigit():
                taken.append((int(fields[2]), int(fields[2]) + 1))
    return taken


@functools.cache
def host_range() -> IdRange:
    """The range this host's fakes give their sandboxes (see the module's docstring)."""
    taken = _taken()
    base = DEFAULT_BASE
    while any(start < base + SIZE and base < end for start, end in taken):
        base += SIZE
    return IdRange(base)


def map_user_namespace(pid: int, ids: IdRange) -> None:
    """Give the user namespace of ``pid`` (made, not yet mapped) the range ``ids``."""
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w", encoding="ascii") as handle:
            handle.write(ids.map_line())


def userns(ids: IdRange) -> int:
    """A descriptor of a new user namespace with the range ``ids`` (nothing runs in it): the
    map idmapped mounts take. Root only."""
    child = subprocess.Popen(
        ["unshare", "--user", "--", "sh", "-c", "echo; read -r _"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"},
    )
    stdin, stdout = child.stdin, child.stdout
    assert stdin is not None
    assert stdout is not None
    try:
        if stdout.readline() != b"\n":
            raise OSError("unshare --user did not start")
        map_user_namespace(child.pid, ids)
        return os.open(f"/proc/{child.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        with contextlib.suppress(OSError):
            stdin.close()
        stdout.close()
        child.wait()
