"""Mount namespaces the fake owns: made in a short-lived thread, kept alive by a descriptor.

A thread that leaves the fake's filesystem context (``unshare(CLONE_FS)``) may enter or make
a mount namespace without moving any other thread of the fake; it mounts what the namespace
needs and exits. The namespace lives while its descriptor is open or a process runs in it:
closing the descriptor after the last process died unmounts everything in it, so a fake that
dies (even by SIGKILL) leaves no mount behind on the host, which never sees these mounts.
Mounting needs root (``CAP_SYS_ADMIN``).
"""

from __future__ import annotations

import ctypes
import os
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from fake_server.runtime.process.containment.nsthread import fresh_thread

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["MountSpace", "attach", "idmapped", "in_thread", "mount", "unmount"]

CLONE_FS, CLONE_NEWNS = 0x200, 0x20000
MS_RDONLY, MS_NOSUID, MS_NODEV = 0x1, 0x2, 0x4
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MS_SHARED, MNT_DETACH = 0x100000, 0x2

_T = TypeVar("_T")
_R = TypeVar("_R")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (
    ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p,
)  # fmt: skip
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
_libc.unshare.argtypes = (ctypes.c_int,)
_libc.setns.argtypes = (ctypes.c_int, ctypes.c_int)
_libc.syscall.restype = ctypes.c_long

#: The new mount API's system calls (the same numbers on every architecture since Linux 5.2).
_OPEN_TREE, _MOVE_MOUNT, _MOUNT_SETATTR = 428, 429, 442
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC = 0x1, os.O_CLOEXEC
_AT_FDCWD, _AT_EMPTY_PATH, _AT_RECURSIVE = -100, 0x1000, 0x8000
_MOVE_MOUNT_F_EMPTY_PATH, _MOVE_MOUNT_T_EMPTY_PATH = 0x4, 0x40
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
_MOUNT_ATTR_IDMAP = 0x100000


class _MountAttr(ctypes.Structure):
    _fields_ = (
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    )


def _check(status: int, what: str) -> None:
    if status != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    """mount(2); ``OSError`` naming the file system type (never a path) on failure."""
    _check(
        _libc.mount(
            source.encode(),
            os.fsencode(target),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {fstype or 'bind'}",
    )


def unmount(target: str) -> None:
    """umount2(2) with ``MNT_DETACH`` (what is mounted below goes too)."""
    _check(_libc.umount2(os.fsencode(target), MNT_DETACH), "umount")


def idmapped(source: str | int, userns: int, *, readonly: bool = False) -> int:
    """A detached copy of the mount at ``source`` (a path, or a descriptor of a directory)
    whose owners are shifted by the user namespace ``userns``'s map: host uid 0 shows as the
    map's first id, so a sandbox's root owns what the host's root does. The caller attaches it
    (``attach``) and closes the descriptor. Needs Linux 5.12 and a file system that allows it
    (ext4, xfs, btrfs, tmpfs from 6.3 …); ``OSError`` otherwise."""
    if isinstance(source, int):
        path, dirfd, flags = b"", source, _AT_EMPTY_PATH
    else:
        path, dirfd, flags = os.fsencode(source), _AT_FDCWD, 0
    fd = _libc.syscall(_OPEN_TREE, dirfd, path, _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | flags)
    _check(0 if fd >= 0 else -1, "open_tree")
    attr = _MountAttr(
        _MOUNT_ATTR_IDMAP | _MOUNT_ATTR_NODEV | (_MOUNT_ATTR_RDONLY if readonly else 0),
        0,
        0,
        userns,
    )
    status = _libc.syscall(
        _MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr)
    )
    if status != 0:
        code = ctypes.get_errno()
        os.close(fd)
        raise OSError(code, f"mount_setattr idmap: {os.strerror(code)}")
    return int(fd)


def attach(mount_fd: int, target: str | int) -> None:
    """Attach the detached mount ``mount_fd`` at ``target`` (a path, or a directory's
    descriptor) in the calling thread's mount namespace."""
    if isinstance(target, int):
        path, dirfd, flags = b"", target, _MOVE_MOUNT_T_EMPTY_PATH
    else:
        path, dirfd, flags = os.fsencode(target), _AT_FDCWD, 0
    status = _libc.syscall(
        _MOVE_MOUNT, mount_fd, b"", dirfd, path, _MOVE_MOUNT_F_EMPTY_PATH | flags
    )
    _check(int(status), "move_mount")


def in_thread(body: Callable[[], _T]) -> _T:
    """Run ``body`` in a fresh thread with a filesystem context of its own, which exits after."""

    def unshared() -> _T:
        _check(_libc.unshare(CLONE_FS), "unshare")
        return body()

    return fresh_thread(unshared, name="createos-mountns")


class MountSpace(Generic[_T]):
    """A private mount namespace (a copy of ``parent``'s, or of the fake's) set up by ``setup``.

    ``setup`` runs inside it, returns what the caller keeps (descriptors opened there stay
    usable from every thread); ``result`` holds that value.
    """

    def __init__(self, setup: Callable[[], _T], parent: MountSpace[Any] | None = None) -> None:
        holder: list[_T] = []

        def make() -> int:
            if parent is not None:
                _check(_libc.setns(parent.fileno, CLONE_NEWNS), "setns")
            _check(_libc.unshare(CLONE_NEWNS), "unshare")
            mount("none", "/", None, MS_REC | MS_PRIVATE)
            holder.append(setup())
            return os.open("/proc/thread-self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)

        self._fd: int | None = in_thread(make)
        self.result: _T = holder[0]

    @property
    def fileno(self) -> int:
        if self._fd is None:
            raise OSError("the mount namespace was closed")
        return self._fd

    @property
    def path(self) -> str:
        """The namespace as other programs name it (``nsenter --mount=``)."""
        return f"/proc/{os.getpid()}/fd/{self.fileno}"

    def run(self, body: Callable[[], _R]) -> _R:
        """Run ``body`` inside the namespace (in a thread of its own)."""
        fd = self.fileno

        def inside() -> _R:
            _check(_libc.setns(fd, CLONE_NEWNS), "setns")
            return body()

        return in_thread(inside)

    def close(self) -> None:
        """Release the namespace (its mounts go with its last process); idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
