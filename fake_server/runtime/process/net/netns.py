"""One network namespace per process-runtime sandbox, shared by all its processes.

The fake creates the namespace itself: a short-lived thread calls ``unshare(CLONE_NEWNET)``,
opens ``/proc/thread-self/ns/net`` (the descriptor keeps the namespace alive), brings its
loopback up and exits, so no other thread of the fake ever changes namespace. The sandbox's
processes enter it through ``nsenter --net=/proc/<fake>/fd/<n>``, which then runs bwrap
(without ``--unshare-net``); the descriptor is close-on-exec, so no sandbox process holds it.

Nothing outlives the fake: the namespace goes away when its descriptor is closed (destroy,
reset, close, or the fake's death) and its last process has died (bwrap runs them with
``--die-with-parent``). There is no file under ``/run/netns`` and no keeper process.

The namespace belongs to the host's user namespace: sandbox processes (root of a user namespace
of their own; uid 1000 on the host-directory layout) can use it but not reconfigure it.
Creating it needs root (``CAP_SYS_ADMIN``); ``require_netns()`` says so once, with what to do.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import socket
import struct
from typing import TYPE_CHECKING, TypeVar

from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.process.containment.nsthread import fresh_thread

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["NetNamespace", "in_namespace", "nsenter_path"]

CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = "16sH14x"

_T = TypeVar("_T")

_libc = ctypes.CDLL(None, use_errno=True)


def _syscall(name: str) -> Callable[..., int]:
    func = getattr(_libc, name)
    func.argtypes = (ctypes.c_int,) if name == "unshare" else (ctypes.c_int, ctypes.c_int)
    func.restype = ctypes.c_int

    def call(*args: int) -> int:
        if func(*args) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return 0

    return call


_unshare = _syscall("unshare")
_setns = _syscall("setns")


def _in_thread(body: Callable[[], _T]) -> _T:
    """Run ``body`` in a fresh thread that exits afterwards (namespaces are per thread)."""
    return fresh_thread(body, name="createos-netns")


def in_namespace(fd: int | None, body: Callable[[], _T]) -> _T:
    """Run ``body`` in a fresh thread inside the network namespace ``fd`` (``None``: the
    fake's own); sockets it opens stay in that namespace."""

    def run() -> _T:
        if fd is not None:
            _setns(fd, CLONE_NEWNET)
        return body()

    return _in_thread(run)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        current = fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0))
        flags = struct.unpack(_IFREQ, current)[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))


def _create() -> int:
    _unshare(CLONE_NEWNET)
    fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _loopback_up()
    except BaseException:
        os.close(fd)
        raise
    return fd


class NetNamespace:
    """A sandbox's network namespace: loopback only, until something adds an interface."""

    def __init__(self) -> None:
        self._fd: int | None = _in_thread(_create)

    @property
    def closed(self) -> bool:
        return self._fd is None

    @property
    def fileno(self) -> int:
        """The descriptor that keeps the namespace alive."""
        return self._live()

    @property
    def inode(self) -> str:
        """``net:[…]``, as ``/proc/<pid>/ns/net`` of every process inside reads."""
        return os.readlink(f"/proc/self/fd/{self._live()}")

    @property
    def path(self) -> str:
        """A path naming the namespace to other programs (``nsenter``, ``ip … netns``)."""
        return f"/proc/{os.getpid()}/fd/{self._live()}"

    def enter_argv(self) -> list[str]:
        """The argv prefix that runs a command inside (``nsenter``, then the command)."""
        return [nsenter_path(), f"--net={self.path}", "--"]

    def socket(
        self,
        family: socket.AddressFamily = socket.AF_INET,
        kind: socket.SocketKind = socket.SOCK_STREAM,
    ) -> socket.socket:
        """A non-blocking socket (TCP unless ``kind`` says) that lives in this namespace."""
        fd = self._live()

        def make() -> socket.socket:
            _setns(fd, CLONE_NEWNET)
            sock = socket.socket(family, kind)
            sock.setblocking(False)
            return sock

        return _in_thread(make)

    def close(self) -> None:
        """Release the namespace (it goes when its last process has died); idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _live(self) -> int:
        if self._fd is None:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "the sandbox has no network")
        return self._fd


def nsenter_path() -> str:
    """util-linux's ``nsenter``; ``RuntimeUnavailable`` without it."""
    path = shutil.which("nsenter") or shutil.which("nsenter", path="/usr/bin:/bin:/usr/sbin")
    if path is None:
        raise RuntimeUnavailable(
            "a sandbox's processes need nsenter (util-linux) to share its network namespace, "
            "and it is not installed (apt-get install util-linux)"
        )
    return path
