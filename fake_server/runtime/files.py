"""What the files API moves between a client and a sandbox's disk, on either runtime.

Downloads and uploads go through a ``Source`` and a ``Target`` in chunks, so the fake holds
one chunk of a file at a time, never the whole of it. Only regular files move: a FIFO, a
device or a socket raises ``NotRegularFile`` (the API answers 400), without the fake ever
waiting on one (reading a FIFO would block until a writer came, and every request with it).

A disk that opens host files itself (the process runtime's ``DirDisk``: ``FileDisk``) gives
descriptors, read and written on the loop's executor, so a slow disk never stalls the loop.
Any other disk (bashkit's in-memory ones) has its whole file read at once, and an upload is
gathered up to the disk's file limit and written at the end (bashkit holds files whole).
"""

from __future__ import annotations

import asyncio
import errno
import io
import os
import stat
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.runtime.api import Disk

__all__ = [
    "CHUNK",
    "FileDisk",
    "NotRegularFile",
    "Source",
    "Target",
    "kind_of",
    "open_source",
    "open_target",
]

#: Bytes moved at a time between a host file and a connection.
CHUNK = 256 * 1024

_T = TypeVar("_T")


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket: the files API moves regular files only."""

    def __init__(self, kind: str, path: str) -> None:
        super().__init__(errno.EINVAL, f"is a {kind}, not a regular file", path)
        self.kind = kind


def kind_of(mode: int) -> str:
    """What a non-regular file is, as the API's message names it."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


@runtime_checkable
class FileDisk(Protocol):
    """A disk whose files are host files: descriptors of regular files, never blocking."""

    def open_read(self, path: str) -> int: ...
    def open_write(self, path: str) -> int: ...


class _Descriptor:
    """A host file's descriptor used from the loop's executor: ``close()`` while a read or
    write is still running there closes it once that call returns, so the call never meets
    a descriptor number reused by another file meanwhile."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self._busy: asyncio.Future[Any] | None = None

    async def run(self, call: Callable[..., _T], *args: object) -> _T:
        assert self.fd is not None
        future = asyncio.get_running_loop().run_in_executor(None, call, self.fd, *args)
        self._busy = future
        return await future

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is None:
            return
        busy = self._busy
        if busy is not None and not busy.done():
            busy.add_done_callback(lambda _: os.close(fd))
        else:
            os.close(fd)


class Source:
    """A file being downloaded: its size, then its bytes ``read()`` a chunk at a time."""

    def __init__(self, size: int, fd: int | None = None, data: bytes = b"") -> None:
        self.size = size
        self._file = _Descriptor(fd)
        self._data = io.BytesIO(data)

    async def read(self, limit: int = CHUNK) -> bytes:
        """Up to ``limit`` bytes; ``b""`` at the end of the file."""
        if self._file.fd is None:
            return self._data.read(limit)
        return await self._file.run(os.read, limit)

    def close(self) -> None:
        self._file.close()


class Target:
    """A file being uploaded: ``write()`` each chunk, then ``finish()`` (or ``close()`` alone
    to give up: a host file keeps what was written, an in-memory one is left unchanged)."""

    def __init__(
        self, fd: int | None = None, disk: Disk | None = None, path: str = "", limit: int = 0
    ) -> None:
        self.size = 0
        self._file = _Descriptor(fd)
        self._disk = disk
        self._path = path
        self._limit = limit
        self._parts: list[bytes] = []

    async def write(self, data: bytes) -> None:
        """Raises ``OSError`` (``EFBIG`` past an in-memory disk's file limit, ``ENOSPC``)."""
        self.size += len(data)
        if self._file.fd is None:
            if self.size > self._limit:
                raise OSError(errno.EFBIG, os.strerror(errno.EFBIG), self._path)
            self._parts.append(bytes(data))
            return
        await self._file.run(_write_all, data)

    async def finish(self) -> None:
        if self._file.fd is None and self._disk is not None:
            self._disk.write_file(self._path, b"".join(self._parts))
        self.close()

    def close(self) -> None:
        self._parts.clear()
        self._file.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def open_source(disk: Disk, path: str) -> Source:
    """The regular file ``path`` of ``disk``, open for download.

    Raises ``NotRegularFile``, ``IsADirectoryError``, ``FileNotFoundError`` and other
    ``OSError`` as reading would."""
    if isinstance(disk, FileDisk):
        fd = disk.open_read(path)
        try:
            size = os.fstat(fd).st_size
        except BaseException:
            os.close(fd)
            raise
        return Source(size, fd=fd)
    data = disk.read_file(path)
    return Source(len(data), data=data)


def open_target(disk: Disk, path: str, limit: int) -> Target:
    """The file ``path`` of ``disk``, open for an upload (created, or truncated at once on a
    host disk); an in-memory disk takes at most ``limit`` bytes."""
    if isinstance(disk, FileDisk):
        return Target(fd=disk.open_write(path))
    return Target(disk=disk, path=path, limit=limit)
