"""The files API of a process-runtime sandbox: guest paths resolved inside its host directory.

Paths are walked one component at a time with directory file descriptors (``openat`` with
``O_NOFOLLOW``), and symlinks are followed by hand with the sandbox directory as ``/``: ``..``
stops at the root, an absolute link target restarts from the root. So neither ``..``, nor a
symlink a sandbox process planted (even one swapped in mid-walk), reaches outside the
directory. The host directories the sandbox sees read-only (``/usr``…) are not part of it:
the files API reads and writes the sandbox's own files only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from typing import TYPE_CHECKING

from fake_server.runtime.files import NotRegularFile, kind_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

__all__ = ["DirDisk"]

_MAX_LINKS = 40
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: How the files API opens a file: never waiting on a FIFO, never taking a terminal.
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY
#: The root itself may be a path through a descriptor (``/proc/<pid>/fd/<n>``, ``rootfs``).
_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class DirDisk:
    """Guest-path file operations on one sandbox directory (``root``)."""

    def __init__(
        self, root: Path | Callable[[], Path], *, owner: tuple[int, int] | None = None
    ) -> None:
        """``root``: the directory, or what makes it on first use (a restored sandbox);
        ``owner``: the host uid and gid files and directories it creates are given (the
        sandbox's root, an id of its range), else they stay the fake's."""
        self._root = root
        self._owner = owner
        self._wiped = False

    @property
    def root(self) -> Path:
        if callable(self._root):
            self._root = self._root()
        return self._root

    # -- API ----------------------------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        with os.fdopen(self.open_read(path), "rb") as handle:
            return handle.read()

    def write_file(self, path: str, data: bytes, *, mode: int | None = None) -> None:
        with os.fdopen(self.open_write(path), "wb") as handle:
            handle.write(bytes(data))
            if mode is not None:
                os.fchmod(handle.fileno(), mode & 0o7777)

    def open_read(self, path: str) -> int:
        """A descriptor of the regular file ``path``, open for reading.

        Opened non-blocking, so a FIFO never waits for a writer: anything but a regular file
        raises ``NotRegularFile`` (a directory ``IsADirectoryError``)."""
        try:
            fd = self._open(path, _READ_FLAGS, create=False)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a socket, a device without its driver
                raise NotRegularFile(self._special(path, "socket"), path) from None
            raise
        return _regular(fd, path)

    def open_write(self, path: str) -> int:
        """A descriptor of the regular file ``path`` (created with its parents if missing,
        given to the sandbox's root), emptied and open for writing; ``NotRegularFile`` for a
        FIFO, device or socket, which is neither waited on (non-blocking open) nor truncated."""
        try:
            fd = self._open(path, _WRITE_FLAGS, create=True)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO without a reader, a socket
                raise NotRegularFile(self._special(path, "FIFO or socket"), path) from None
            raise
        fd = _regular(fd, path)
        try:
            os.ftruncate(fd, 0)
            self._adopt(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _special(self, path: str, guess: str) -> str:
        """What the special file ``path`` is (``guess`` where it cannot be told)."""
        try:
            fd = self._open(path, os.O_PATH, create=False)
        except (OSError, ValueError):
            return guess
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        return guess if stat.S_ISLNK(mode) or stat.S_ISREG(mode) else kind_of(mode)

    def make_dirs(self, path: str) -> None:
        """Create the directory ``path`` and its parents (a template's empty directories)."""
        with self._parent(posixpath.join(path, "entry"), create=True):
            pass

    def open_dir(self, path: str) -> int:
        """A descriptor of the directory ``path``, made with its parents if missing (a disk's
        mount point, a bucket's ``sub_path``); ``NotADirectoryError`` when a file is there."""
        with self._parent(posixpath.join(path, "entry"), create=True) as (fd, _, _):
            return os.dup(fd)

    def exists(self, path: str) -> bool:
        return self._kind(path) is not None

    def is_dir(self, path: str) -> bool:
        return self._kind(path) == "directory"

    def is_file(self, path: str) -> bool:
        return self._kind(path) == "file"

    def wipe(self) -> None:
        """Marks the disk unusable; the runtime removes the directory itself."""
        self._wiped = True

    @property
    def wiped(self) -> bool:
        return self._wiped

    def _adopt(self, fd: int) -> None:
        """Give a file the fake just created (it is the fake's) to the sandbox's root."""
        if self._owner is not None and os.fstat(fd).st_uid == os.geteuid():
            os.fchown(fd, *self._owner)

    # -- walking ------------------------------------------------------------------------------

    def _kind(self, path: str) -> str | None:
        try:
            fd = self._open(path, os.O_RDONLY | os.O_NONBLOCK, create=False)
        except (OSError, ValueError):
            return None
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        if stat.S_ISDIR(mode):
            return "directory"
        return "file" if stat.S_ISREG(mode) else "other"

    def _open(self, path: str, flags: int, *, create: bool) -> int:
        """An fd of ``path``, symlinks followed with the sandbox directory as ``/``."""
        for _ in range(_MAX_LINKS + 1):
            with self._parent(path, create=create) as (dirfd, name, parent):
                if not name:
                    if flags & os.O_ACCMODE != os.O_RDONLY:
                        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
                    return os.dup(dirfd)
                try:
                    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dirfd)
                except OSError as exc:
                    if exc.errno == errno.EISDIR:
                        raise IsADirectoryError(exc.errno, os.strerror(exc.errno), path) from None
                    if exc.errno != errno.ELOOP:
                        raise _error(exc.errno or errno.EIO, path) from None
                target = _readlink(name, dirfd)
            if target is None:
                raise _error(errno.ELOOP, path)
            path = posixpath.join(parent, target)  # an absolute target replaces the parent
        raise _error(errno.ELOOP, path)

    @contextlib.contextmanager
    def _parent(self, path: str, *, create: bool) -> Iterator[tuple[int, str, str]]:
        """The resolved parent directory of ``path`` (an fd and its guest path), and the last
        component (empty when ``path`` names a directory such as ``/`` or ``/a/..``)."""
        if self._wiped:
            raise RuntimeError("the sandbox disk was wiped (sandbox destroyed)")
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
            raise ValueError("sandbox paths must be absolute and contain no NUL")
        parts = [p for p in path.split("/") if p not in ("", ".")]
        last = parts.pop() if parts and parts[-1] != ".." else ""
        stack = [os.open(self.root, _ROOT_FLAGS)]
        names: list[str] = []
        try:
            self._walk(stack, names, parts, create, path)
            yield stack[-1], last, "/" + "/".join(names)
        finally:
            for fd in stack:
                os.close(fd)

    def _walk(
        self, stack: list[int], names: list[str], parts: list[str], create: bool, path: str
    ) -> None:
        pending = list(reversed(parts))
        links = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if len(stack) > 1:
                    os.close(stack.pop())
                    names.pop()
                continue
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=stack[-1])
            except OSError as exc:
                if exc.errno == errno.ENOENT and create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=stack[-1])
                        if self._owner is not None:
                            os.chown(part, *self._owner, dir_fd=stack[-1], follow_symlinks=False)
                    pending.append(part)
                    continue
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise _error(exc.errno or errno.EIO, path) from None
                target = _readlink(part, stack[-1])
                if target is None:
                    raise _error(errno.ENOTDIR, path) from None
                links += 1
                if links > _MAX_LINKS:
                    raise _error(errno.ELOOP, path) from None
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop())
                    names.clear()
                pending.extend(reversed(target.split("/")))
                continue
            stack.append(fd)
            names.append(part)


def _regular(fd: int, path: str) -> int:
    """``fd`` when it is a regular file's, blocking again; closed and refused otherwise."""
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise NotRegularFile(kind_of(mode), path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _readlink(name: str, dirfd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dirfd)
    except OSError:
        return None


def _error(code: int, path: str) -> OSError:
    if code == errno.ENOENT:
        return FileNotFoundError(code, os.strerror(code), path)
    if code == errno.ENOTDIR:
        return NotADirectoryError(code, os.strerror(code), path)
    if code == errno.EISDIR:
        return IsADirectoryError(code, os.strerror(code), path)
    return OSError(code, os.strerror(code), path)
