"""Files ``serve`` writes on the host (``--print-env FILE``, ``--state-dir DIR``), never through
a link someone planted.

A name the fake writes under is predictable (``.FILE.<pid>.partial`` once was): a symlink
planted there by another user of a shared folder (``/tmp``, a CI runner's temp dir) made
``serve`` write its keys into the link's target. So a file is always created new:
``O_CREAT | O_EXCL | O_NOFOLLOW`` with a random name in the target's own folder, mode 0600,
written, then renamed over the target (a rename replaces a link itself, never its target). A
file the fake keeps open under a fixed name (the state directory's ``lock``) is opened with
``O_NOFOLLOW``, and anything but a regular file there is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["NotOwnFile", "create_new", "open_own", "write_whole"]

#: How a new file is made: never an existing name, never through a link.
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_TRIES = 16


class NotOwnFile(OSError):
    """A name the fake writes under holds a symlink or a special file."""


def create_new(folder: Path, prefix: str, mode: int = 0o600) -> tuple[int, Path]:
    """A new file ``folder/<prefix><random>`` open for writing (its descriptor and path)."""
    for _ in range(_TRIES):
        path = folder / f"{prefix}{secrets.token_hex(8)}"
        try:
            fd = os.open(path, _NEW, mode)
        except FileExistsError:
            continue
        os.fchmod(fd, mode)  # whatever the umask
        return fd, path
    raise FileExistsError(errno.EEXIST, "no free name for a new file", str(folder))


def write_whole(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` whole (a reader sees the old file or the new one, never
    part of it): a new file in the same folder, then renamed over ``path``."""
    fd, partial = create_new(path.parent, f".{path.name}.", mode)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def open_own(path: Path, flags: int, mode: int = 0o600) -> int:
    """``path`` opened with ``flags`` (``O_CREAT`` allowed), refusing a symlink or anything but
    a regular file there (``NotOwnFile``); never waits on a FIFO."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            raise NotOwnFile(exc.errno, "is a symlink or a special file", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotOwnFile(errno.EINVAL, "is not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
