"""How many sandboxes and commands the fake's process can hold: bashkit's file descriptors.

Every bashkit object runs its own small async runtime holding 3 file descriptors: each
sandbox disk (for the sandbox's whole life) and each running command's interpreter (for the
run). Under the common open-files limit of 1024 that is about 325 live sandboxes. Past the
limit bashkit fails deep inside, so the fake checks first and refuses a new sandbox or command
with ``CapacityError`` while a margin of descriptors is still free for its own sockets; the
API answers it as the service's 503 "no host with capacity" with ``Retry-After``.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FDS_PER_OBJECT", "RESERVED_FDS", "CapacityError", "check_capacity", "create"]

#: Descriptors one bashkit ``FileSystem`` or ``Bash`` holds while it lives.
FDS_PER_OBJECT = 3
#: Descriptors kept free for connections, files and the event loop.
RESERVED_FDS = 48

_FD_DIR = "/proc/self/fd"
_T = TypeVar("_T")


class CapacityError(OSError):
    """The fake's process is out of file descriptors for another sandbox or command."""

    def __init__(self) -> None:
        limit = open_files_limit()
        if limit is None:
            where = "the process's open-files limit"
        else:
            sandboxes = max(0, (limit - RESERVED_FDS) // FDS_PER_OBJECT)
            where = f"the open-files limit ({limit}, about {sandboxes} live sandboxes)"
        super().__init__(
            errno.EMFILE,
            "the fake is at capacity: each live sandbox holds 3 file descriptors and each "
            f"running command 3 more, within {where}; destroy sandboxes or raise the limit "
            "(ulimit -n)",
        )


def open_files_limit() -> int | None:
    """The soft ``RLIMIT_NOFILE`` of this process, ``None`` when unknown or unlimited."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


#: Counting ``/proc/self/fd`` costs about 1 ms per thousand descriptors, on every sandbox and
#: command. Far from the limit a count is reused for this many objects, as if each held its
#: descriptors and nothing was closed since (an overestimate); past ``_FAR`` of the limit every
#: object is counted.
_REUSE = 32
_FAR = 0.75


class _Count:
    limit = 0
    used = 0
    since = 0


def check_capacity() -> None:
    """Raise ``CapacityError`` unless one more bashkit object fits with the margin to spare."""
    limit = open_files_limit()
    if limit is None:
        return
    count = _Count
    estimate = count.used + FDS_PER_OBJECT * (count.since + 1) + RESERVED_FDS
    if count.limit == limit and count.since < _REUSE and estimate <= limit * _FAR:
        count.since += 1
        return
    try:
        used = len(os.listdir(_FD_DIR))
    except OSError:  # no /proc: rely on ``create()`` catching the failure itself
        return
    count.limit, count.used, count.since = limit, used, 0
    if used + FDS_PER_OBJECT + RESERVED_FDS > limit:
        raise CapacityError


def create(factory: Callable[[], _T]) -> _T:
    """``factory()`` (a bashkit constructor) after ``check_capacity()``; its own failure for
    want of descriptors becomes ``CapacityError`` too."""
    check_capacity()
    try:
        return factory()
    except RuntimeError as exc:
        if "Too many open files" in str(exc) or "os error 24" in str(exc):
            raise CapacityError from None
        raise
