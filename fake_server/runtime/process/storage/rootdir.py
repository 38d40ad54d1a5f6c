"""Where the process runtime keeps sandboxes: one directory per fake under a known temp dir.

``<tmp>/createos-fake-process/<pid>-<random>/`` holds a ``lock`` file the owning fake keeps
``flock``-ed for its whole life, and one directory per sandbox. A fake that was killed leaves
its directory behind unlocked; the next fake to start removes every such leftover. Processes
do not outlive their fake (bwrap runs them with ``--die-with-parent``), except one killed in
the instant before bwrap takes that setting: the sweep kills what still runs from a leftover
directory before removing it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from fake_server.runtime.process.containment.procview import unmount_under

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "BASE_NAME",
    "TRASH",
    "FakeRoot",
    "KeptRoot",
    "kill_processes_of",
    "make_layout",
    "processes_naming",
    "public_temp",
    "shift_owners",
    "traversable",
]

BASE_NAME = "createos-fake-process"
#: The name a destroyed sandbox's directory has while it is removed in the background
#: (``userroot.Removals``).
TRASH = ".removing-"

#: The sandbox's writable top-level directories and their modes.
_DIRS = (
    ("root", 0o700),
    ("home", 0o755),
    ("home/sandbox", 0o755),
    ("tmp", 0o1777),
    ("srv", 0o755),
    ("paperclip-workspace", 0o755),
    ("etc", 0o755),
    ("var", 0o755),
    ("var/tmp", 0o1777),
    ("usr", 0o755),
    ("proc", 0o555),
    ("dev", 0o755),
)
_LINKS = (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"))
_ETC = {
    "os-release": 'PRETTY_NAME="CreateOS fake sandbox (host programs)"\n'
    'NAME="CreateOS fake sandbox"\nID=debian\n',
    "hostname": "sandbox\n",
    "hosts": "127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n::1\tlocalhost\n",
    "passwd": "root:x:0:0:root:/root:/bin/bash\n"
    "sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
    #: The router's resolver (``router.GATEWAY``; relayed to the host's).
    "resolv.conf": "nameserver 169.254.0.1\n",
}


def make_layout(directory: Path) -> None:
    """A fresh sandbox filesystem: the writable directories, ``/etc`` files, ``/bin`` links."""
    directory.mkdir(mode=0o755)
    for name, mode in _DIRS:
        path = directory / name
        path.mkdir(exist_ok=True)
        path.chmod(mode)
    for name, target in _LINKS:
        (directory / name).symlink_to(target)
    for name, text in _ETC.items():
        (directory / "etc" / name).write_text(text)


def copy_tree(source: Path, target: Path) -> None:
    """Copy a sandbox directory, sharing blocks (reflink) where the filesystem can."""
    done = subprocess.run(
        ["cp", "-a", "--reflink=auto", "--", str(source), str(target)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        raise OSError("cannot copy the sandbox's directory")


def remove_tree(path: Path) -> None:
    """Remove a sandbox directory, whatever its processes made read-only inside it."""

    def retry(func: object, name: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), 0o700)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, 0o700)
                shutil.rmtree(name, ignore_errors=True)
            else:
                os.unlink(name)

    if not (path.exists() or path.is_symlink()):
        return
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


def shift_owners(top: Path, base: int) -> None:
    """Give ``top`` (a sandbox's upper layer) to the sandbox's root (host uid ``base``), and
    move what is below it from host ids into the range where a version of the fake before id
    ranges left it so (a kept disk): id ``n`` becomes ``base + n``. Nothing else to do when
    ``top`` already belongs to ``base``."""
    info = os.lstat(top)
    if info.st_uid >= base:
        return
    for path, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            entry = os.path.join(path, name)
            found = os.lstat(entry)
            if found.st_uid < base:
                os.lchown(entry, base + found.st_uid, base + found.st_gid)
    os.lchown(top, base + info.st_uid, base + info.st_gid)


def traversable(path: Path) -> bool:
    """Whether any user may pass through ``path`` and every directory above it (``o+x``)."""
    for directory in [path, *path.parents]:
        try:
            if not os.stat(directory).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def public_temp() -> Path:
    """A temporary directory any user can reach: the system's (``$TMPDIR``), else ``/tmp``,
    ``/var/tmp`` or ``/dev/shm`` (where a sandbox's own ids, unprivileged on the host, find
    the programs their init runs)."""
    for candidate in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        path = Path(candidate)
        if path.is_dir() and traversable(path):
            return path
    raise OSError("no temporary directory that every user may pass through (/tmp is o+x)")


class FakeRoot:
    """One fake's directory of sandboxes, locked while the fake lives (``remove``: how a
    directory of sandboxes is removed, ``remove_tree`` unless their ids need more)."""

    def __init__(
        self, base: Path | None = None, remove: Callable[[Path], None] = remove_tree
    ) -> None:
        self.base = base if base is not None else Path(tempfile.gettempdir()) / BASE_NAME
        self.base.mkdir(mode=0o711, exist_ok=True)
        self._remove = remove
        self.removed_leftovers = sweep(self.base, remove)
        self.path = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=self.base))
        # Others may pass through (not list) both: a sandbox's init starts the copy of bwrap
        # kept here (``programs``) as the sandbox's root, an unprivileged id on the host.
        for path in (self.base, self.path):
            if os.stat(path).st_uid == os.geteuid():
                os.chmod(path, 0o711)
        self._lock_fd: int | None = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(self._lock_fd, f"{os.getpid()}\n".encode())

    def sandbox_dir(self, sandbox_id: str) -> Path:
        return self.path / sandbox_id

    @property
    def programs(self) -> Path:
        """Where programs the sandboxes' own ids run from are copied (``bwrap``)."""
        return self.path / ".programs"

    def close(self) -> None:
        """Remove every sandbox directory and the root itself; idempotent."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is None:
            return
        self._remove(self.path)
        os.close(fd)


class KeptRoot(FakeRoot):
    """A fixed directory of sandboxes that outlives the fake (``serve --state-dir``).

    Nothing is swept and ``close()`` leaves every sandbox directory in place; the caller
    holds the state directory's lock, so no other fake uses it meanwhile. A process left
    running there by a fake that was killed is killed first (its sandbox comes back paused),
    and a template build's sandbox it left is removed (a build never outlives its fake: the
    template builds again), as is a destroyed sandbox's directory it was removing (``TRASH``).
    """

    def __init__(self, path: Path, remove: Callable[[Path], None] = remove_tree) -> None:
        # no super(): no sweep, no temporary directory
        self.base = path.parent
        self.removed_leftovers = 0
        self.path = path
        self._remove = remove
        self.path.mkdir(mode=0o700, exist_ok=True)
        kill_processes_of(self.path)
        for build in (*self.path.glob("build-*"), *self.path.glob(f"{TRASH}*")):
            remove(build)  # (and what a destroy was removing when it was killed)
        self._lock_fd = None

    def close(self) -> None:
        """Keep every sandbox directory (the next start restores them)."""


def sweep(base: Path, remove: Callable[[Path], None] = remove_tree) -> int:
    """Remove the directories of fakes that died without cleaning up; returns how many."""
    removed = 0
    for entry in base.iterdir():
        if not entry.is_dir() or entry.is_symlink():
            continue
        try:
            fd = os.open(entry / "lock", os.O_RDWR)
        except FileNotFoundError:
            if _alive(entry.name):
                continue  # a fake between creating its directory and locking it
            fd = None  # died before taking its lock, or half removed
        except OSError:
            continue
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live fake holds it
                if not os.pread(fd, 1, 0) and _alive(entry.name):
                    continue  # a fake between creating its lock and taking it (then it writes)
            kill_processes_of(entry)
            unmount_under(entry)  # its lxcfs's mount (``procview``), dead with it
            remove(entry)
            removed += 1
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def processes_naming(needle: bytes) -> list[int]:
    """Every other process whose command line contains ``needle`` (a path, or its start)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if needle in cmdline:
            found.append(int(entry.name))
    return found


def kill_processes_of(directory: Path) -> int:
    """SIGKILL every process whose command line names a path under ``directory``.

    A sandbox's bwrap (and its namespace's init, bwrap's fork) carry ``--bind <dir>/<id> /``
    in their arguments; killing the init ends everything in its PID namespace.
    """
    killed = 0
    for pid in processes_naming(os.fsencode(directory) + b"/"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def _alive(name: str) -> bool:
    pid = name.split("-", 1)[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
