"""A sandbox's disk: an ext4 image file (sparse) on a loop device, of the sandbox's disk size.

On a disk, not in memory, as on a VM: what a sandbox writes never counts against its shape's
memory (``cgroups``), and writing past the disk's size fails with ENOSPC inside.

Growing a disk while it is mounted (``resize``) needs ``CAP_SYS_RESOURCE``, which some hosts
withhold even from root (a container, or a VM such as the one this project's CI runs on). On
such a host a disk is made with room to grow (``HEADROOM_MIB``) and the space past its size is
held back from everyone (ext4's ``reserved_clusters``): a write past the size fails with ENOSPC
exactly as on a disk of that size, and a resize within the room releases it at once; only
``df``'s Size column shows the room (Used, Avail and Use% are the disk's). The disk's size is
kept with the image (an extended attribute), so a kept disk comes back with it.

A new disk is a sparse copy of a blank image made once per capacity (``Blanks``): copying the
few MiB mkfs.ext4 writes takes about 2.5 ms where running it takes about 14 ms.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from fake_server.runtime.api import FeatureUnavailable

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["HEADROOM_MIB", "Blanks", "DiskImage", "grows_online"]

#: The room a disk is made with where it cannot grow while mounted (sparse: costs a few MiB).
HEADROOM_MIB = 256 * 1024
_MIB = 1024 * 1024
_SIZE_ATTR = "user.createos.disk_mib"
_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
#: How long a kept disk may take to be released by a closed namespace (real seconds, tries).
_RELEASE_POLL, _RELEASE_TRIES = 0.01, 1000
_CAP_SYS_RESOURCE = 24
#: A blank holding more data than this is not copied (a file system without ``SEEK_DATA``
#: would report all of it as data): mkfs.ext4 makes the disk instead.
_BLANK_DATA_LIMIT = 64 * _MIB


@functools.cache
def grows_online() -> bool:
    """Whether this process may grow a mounted ext4 file system (``CAP_SYS_RESOURCE``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> _CAP_SYS_RESOURCE & 1)
    except OSError:
        pass
    return False


class DiskImage:
    """The image file ``path``: made of ``size_mib`` if missing, else reopened with the size
    it had (a kept disk)."""

    def __init__(self, path: Path, size_mib: int, blanks: Blanks | None = None) -> None:
        self.path = path
        if path.exists():
            released(path)
            self.capacity_mib = path.stat().st_size // _MIB
            stored = _stored_size(path)
            self.size_mib = stored if stored is not None else self.capacity_mib
        else:
            self.size_mib = size_mib
            self.capacity_mib = size_mib if grows_online() else max(size_mib, HEADROOM_MIB)
            if blanks is None or not blanks.copy(path, self.capacity_mib):
                _make_ext4(path, self.capacity_mib)
        os.setxattr(path, _SIZE_ATTR, str(self.size_mib).encode())
        #: The mount point (``mount``), its loop device, and the clusters ext4 reserves of its
        #: own there.
        self._target: str | None = None
        self._device = ""
        self._own_reserve = 0

    def mount(self, target: str) -> None:
        """Mount it on ``target`` (in the calling thread's mount namespace), sized."""
        _run(["mount", "-o", "loop,nosuid", str(self.path), target], "mount")
        self._target = target
        self._device = _device(target)  # the mount's for its lifetime: asked once
        self._own_reserve = int(_reserve_file(self._device).read_text())
        self._hold_back()

    def resize(self, size_mib: int) -> None:
        """Grow to ``size_mib`` (call inside the mount's namespace). ``FeatureUnavailable``
        past the room where a mounted disk cannot grow (nothing changed)."""
        if size_mib <= self.size_mib:
            return
        if size_mib > self.capacity_mib:
            if not grows_online():
                raise FeatureUnavailable(
                    f"the disk can grow to at most {self.capacity_mib} MiB while its sandbox "
                    "runs: growing an ext4 disk in use needs CAP_SYS_RESOURCE, which this host "
                    "withholds from the fake"
                )
            os.truncate(self.path, size_mib * _MIB)
            if self._target is not None:
                _run(["losetup", "-c", self._device], "losetup")
                _run([_tool("resize2fs"), self._device], "resize2fs")
            self.capacity_mib = size_mib
        self.size_mib = size_mib
        os.setxattr(self.path, _SIZE_ATTR, str(size_mib).encode())
        self._hold_back()

    def _hold_back(self) -> None:
        """Reserve the room past the disk's size: what the file system holds beyond it, and
        ext4's own reserve scaled to the disk's size (2%, as ext4 keeps on a small disk)."""
        if self._target is None:
            return
        stats = os.statvfs(self._target)
        size = self.size_mib * _MIB // stats.f_frsize
        reserve = min(self._own_reserve, size // 50) + max(0, stats.f_blocks - size)
        _reserve_file(self._device).write_text(f"{reserve}\n")


class Blanks:
    """Blank ext4 images in ``directory`` (the fake's own), one per capacity, the ``KEEP``
    capacities used last: each new disk of a capacity is a sparse copy of its blank."""

    KEEP = 4

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._made: dict[int, Path] = {}  # capacity (MiB) -> blank, the last used last
        self._lock = threading.Lock()  # disks are made on the loop and on worker threads

    def copy(self, path: Path, capacity_mib: int) -> bool:
        """Make ``path`` a copy of the blank of ``capacity_mib`` (made now if missing);
        ``False``, and no ``path``, where no copy could be made (the caller runs mkfs.ext4,
        which says why if it fails too)."""
        with self._lock:
            try:
                return _sparse_copy(self._blank(capacity_mib), path)
            except OSError:
                return False

    def _blank(self, capacity_mib: int) -> Path:
        blank = self._made.pop(capacity_mib, None)
        if blank is None:
            self.directory.mkdir(mode=0o700, exist_ok=True)
            blank = self.directory / f"{capacity_mib}.img"
            blank.unlink(missing_ok=True)
            _make_ext4(blank, capacity_mib)
            while len(self._made) >= self.KEEP:
                oldest = next(iter(self._made))
                self._made.pop(oldest).unlink(missing_ok=True)
        self._made[capacity_mib] = blank
        return blank


def _sparse_copy(source: Path, target: Path) -> bool:
    """Copy ``source``'s data into the new file ``target`` of its size, leaving its holes;
    ``False`` (and no ``target``) where the file system does not tell data from holes."""
    src = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(src).st_size
        extents: list[tuple[int, int]] = []
        offset = 0
        while offset < size:
            try:
                start = os.lseek(src, offset, os.SEEK_DATA)
            except OSError as exc:  # ENXIO: no data past ``offset``
                if exc.errno == errno.ENXIO:
                    break
                return False
            offset = os.lseek(src, start, os.SEEK_HOLE)
            extents.append((start, offset - start))
        if sum(length for _, length in extents) > _BLANK_DATA_LIMIT:
            return False
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        dst = os.open(target, flags, 0o600)
        try:
            os.ftruncate(dst, size)
            for start, length in extents:
                _copy_range(src, dst, start, length)
        except BaseException:
            os.close(dst)
            target.unlink(missing_ok=True)
            raise
        os.close(dst)
        return True
    finally:
        os.close(src)


def _copy_range(src: int, dst: int, start: int, length: int) -> None:
    """Copy ``length`` bytes at ``start`` in the kernel, or through memory across file systems
    that cannot (``EXDEV``)."""
    end = start + length
    while start < end:
        try:
            copied = os.copy_file_range(src, dst, end - start, start, start)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            copied = os.pwrite(dst, os.pread(src, min(end - start, _MIB), start), start)
        if copied <= 0:
            raise OSError(errno.EIO, "a blank disk image ended early")
        start += copied


def _device(target: str) -> str:
    return _run(["findmnt", "-n", "-o", "SOURCE", target], "findmnt").strip()


def _reserve_file(device: str) -> Path:
    from pathlib import Path

    return Path("/sys/fs/ext4") / os.path.basename(device) / "reserved_clusters"


def _stored_size(path: Path) -> int | None:
    try:
        return int(os.getxattr(path, _SIZE_ATTR))
    except (OSError, ValueError):
        return None


def _tool(name: str) -> str:
    """A program of e2fsprogs (in ``/sbin``, which may not be on the fake's ``PATH``)."""
    found = shutil.which(name) or shutil.which(name, path=_PATH)
    if found is None:
        raise OSError(f"{name} (e2fsprogs) is not installed: apt-get install e2fsprogs")
    return found


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, check=False, env={"PATH": _PATH})
    if done.returncode != 0:
        raise OSError(f"{what} failed (status {done.returncode}) for a sandbox's disk")
    return done.stdout.decode()


def released(path: Path) -> None:
    """Wait (bounded) until no loop device holds ``path``: the kernel unmounts a closed
    namespace's file systems a moment after the close, and ext4 must never be mounted twice."""
    for _ in range(_RELEASE_TRIES):
        if not _run(["losetup", "-j", str(path)], "losetup").strip():
            return
        time.sleep(_RELEASE_POLL)
    raise OSError("a sandbox's disk is still mounted by an earlier fake")


def _make_ext4(path: Path, size_mib: int) -> None:
    """A sparse ext4 image of ``size_mib`` (blocks are taken as files are written)."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600), "wb") as handle:
        handle.truncate(size_mib * _MIB)
    options = "lazy_itable_init=1,lazy_journal_init=1,nodiscard"
    _run([_tool("mkfs.ext4"), "-q", "-F", "-m", "0", "-E", options, str(path)], "mkfs.ext4")
