"""One sandbox's filesystem: a bashkit ``FileSystem`` preloaded with a small Linux "image".

The disk outlives every interpreter that runs over it (pause/resume keep it; destroy wipes
it). The image holds ``/usr/bin`` wrapper scripts for bashkit's builtins (``/bin`` is a symlink
to ``usr/bin``, as on Debian 12), because bashkit only runs an absolute command path such as
``/bin/cat`` when that file exists; a ``#!/bin/sh`` script that calls the builtin by name does
exactly that.
"""

from __future__ import annotations

import errno
import os
import posixpath

import bashkit

from fake_server.runtime import capacity
from fake_server.runtime.argv import utf8
from fake_server.runtime.bashkit import vfs
from fake_server.runtime.files import NotRegularFile

__all__ = [
    "IMAGE_COMMANDS",
    "SandboxDisk",
    "wiped_fs",
    "wrapper_script",
]

#: Builtins installed as ``/bin/<name>`` and ``/usr/bin/<name>`` wrapper scripts.
IMAGE_COMMANDS: tuple[str, ...] = (
    "awk", "base64", "basename", "bash", "cat", "chmod", "cksum", "cmp", "comm", "cp",
    "cut", "date", "dd", "df", "diff", "dirname", "du", "echo", "env", "expr", "false",
    "file", "find", "grep", "gunzip", "gzip", "head", "hostname", "id", "install", "kill",
    "ln", "ls", "md5sum", "mkdir", "mktemp", "mv", "nproc", "od", "paste", "printenv",
    "printf", "pwd", "readlink", "realpath", "rm", "rmdir", "sed", "seq", "sh", "sha1sum",
    "sha256sum", "sha512sum", "sleep", "sort", "split", "stat", "tac", "tail", "tar", "tee",
    "test", "timeout", "touch", "tr", "true", "truncate", "uname", "uniq", "unlink", "wc",
    "which", "whoami", "xargs", "yes",
)  # fmt: skip

_OS_RELEASE = b"""PRETTY_NAME="CreateOS fake sandbox (Debian GNU/Linux 12 compatible)"
NAME="CreateOS fake sandbox"
ID=debian
VERSION_ID="12"
"""

_WRAPPER_PREFIX = b"#!/bin/sh\n# createos-fake image command\n"


def wrapper_script(name: str) -> bytes:
    """The executable that makes ``/usr/bin/<name>`` run the shell command ``name``."""
    return _WRAPPER_PREFIX + f'{name} "$@"\n'.encode()


class SandboxDisk:
    """One sandbox's filesystem (bashkit ``FileSystem`` plus the image).

    Paths are absolute; symlinks are followed with Linux semantics. Errors are the usual
    ``OSError`` subclasses; after ``wipe()`` every call raises ``RuntimeError``.
    """

    def __init__(self, *, image: bool = True) -> None:
        self.fs = capacity.create(bashkit.FileSystem)  # CapacityError past the fd limit
        self._wiped = False
        #: Shared filesystems mounted at guest paths (persistent disks; ``runtime.mounts``).
        self.mounts: dict[str, bashkit.FileSystem] = {}
        if image:  # without: bashkit's bare filesystem, for a copy to fill (``diskcopy``)
            self._install_image()

    # -- image --------------------------------------------------------------------------------

    def _install_image(self) -> None:
        if vfs.lstat(self.fs, "/home/user") is not None:  # bashkit's default user home
            self.fs.remove("/home/user", recursive=True)
        for directory, mode in (
            ("/usr/bin", 0o755),
            ("/usr/local/bin", 0o755),
            ("/etc", 0o755),
            ("/tmp", 0o1777),
            ("/root", 0o700),
            ("/home", 0o755),
        ):
            self.fs.mkdir(directory, recursive=True)
            self.fs.chmod(directory, mode)
        self.fs.symlink("usr/bin", "/bin")  # merged /usr, as on Debian 12
        for name in IMAGE_COMMANDS:
            self.install_command(name)
        self.fs.write_file("/etc/os-release", _OS_RELEASE)
        self.fs.write_file("/etc/hostname", b"sandbox\n")

    def install_command(self, name: str) -> None:
        """Make ``/usr/bin/<name>`` (and so ``/bin/<name>``) run the shell command ``name``."""
        self._check()
        path = f"/usr/bin/{name}"
        self.fs.write_file(path, wrapper_script(name))
        self.fs.chmod(path, 0o755)

    def uninstall_command(self, name: str) -> None:
        """Remove the wrapper ``install_command`` wrote (a file changed since is kept)."""
        if self._wiped:
            return
        path = f"/usr/bin/{name}"
        if self.image_command(path) == name:
            self.fs.remove(path)

    def image_command(self, path: str) -> str | None:
        """The command name when ``path`` is one of the image's wrapper scripts, else ``None``."""
        self._check()
        try:
            real = vfs.resolve(self.fs, path, missing="none")
            entry = vfs.lstat(self.fs, real)
            if entry is None or entry.kind != "file" or entry.size > 256:
                return None
            data = self.fs.read_file(real)
        except (OSError, RuntimeError):
            return None
        if not data.startswith(_WRAPPER_PREFIX):
            return None
        name = data[len(_WRAPPER_PREFIX) :].removesuffix(b' "$@"\n').decode(errors="replace")
        return name if wrapper_script(name) == data else None

    # -- file API -----------------------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        """The bytes of a regular file (symlinks followed)."""
        real = self._resolve(path, missing="none")
        if self._kind(real) == "directory":
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        self._refuse_fifo(real, path)
        try:
            return bytes(self.fs.read_file(real))
        except RuntimeError as exc:
            raise vfs.os_error(exc, path) from None

    def write_file(self, path: str, data: bytes, *, mode: int | None = None) -> None:
        """Create or replace a file, creating missing parent directories (like the files API)."""
        self._check()
        full = _absolute(path)
        parent, name = posixpath.split(full)
        if not name:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        real_parent = vfs.mkdirs(self.fs, parent)
        real = vfs.resolve(self.fs, posixpath.join(real_parent, name), missing="last")
        if self._kind(real) == "directory":
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        self._refuse_fifo(real, path)
        try:
            self.fs.write_file(real, bytes(data))
            if mode is not None:
                self.fs.chmod(real, mode & 0o7777)
        except RuntimeError as exc:
            raise vfs.os_error(exc, path) from None

    def exists(self, path: str) -> bool:
        """True when ``path`` exists (a symlink counts only if its target exists)."""
        return self._kind_of(path) is not None

    def is_dir(self, path: str) -> bool:
        return self._kind_of(path) == "directory"

    def is_file(self, path: str) -> bool:
        return self._kind_of(path) == "file"

    def mode(self, path: str) -> int:
        """Permission bits of the file or directory ``path`` names (symlinks followed)."""
        real = self._resolve(path, missing="none")
        entry = vfs.lstat(self.fs, real)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        return entry.mode

    def remove(self, path: str) -> None:
        """Delete a file, a symlink (not its target) or a whole directory tree."""
        self._check()
        real = vfs.physical(self.fs, _absolute(path))
        entry = vfs.lstat(self.fs, real)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        if real == "/":
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), path)
        try:
            self.fs.remove(real, recursive=entry.kind == "directory")
        except RuntimeError as exc:
            raise vfs.os_error(exc, path) from None

    def wipe(self) -> None:
        """Destroy: every file is gone and the disk refuses further use."""
        if self._wiped:
            return
        for item in self.fs.read_dir("/"):
            name = str(item["name"])
            kind = item.get("metadata", {}).get("file_type")
            try:
                self.fs.remove("/" + name, recursive=kind == "directory")
            except RuntimeError:
                continue
        self._wiped = True
        self.fs = wiped_fs()  # the disk's own runtime (3 fds) goes with its files

    @property
    def wiped(self) -> bool:
        return self._wiped

    def used_bytes(self) -> int:
        """Sum of regular file sizes (symlinks not followed), for inspection and quotas."""
        self._check()
        total = 0
        stack = ["/"]
        while stack:
            directory = stack.pop()
            try:
                items = self.fs.read_dir(directory)
            except RuntimeError:
                continue
            for item in items:
                meta = item.get("metadata", {})
                kind = meta.get("file_type")
                if kind == "directory":
                    stack.append(posixpath.join(directory, str(item["name"])))
                elif kind == "file":
                    total += int(meta.get("size", 0))
        return total

    # -- internals ----------------------------------------------------------------------------

    def _check(self) -> None:
        if self._wiped:
            raise RuntimeError("the sandbox disk was wiped (sandbox destroyed)")

    def _resolve(self, path: str, *, missing: vfs.Missing) -> str:
        self._check()
        return vfs.resolve(self.fs, _absolute(path), missing=missing)

    def _refuse_fifo(self, real: str, path: str) -> None:
        """``NotRegularFile`` for a FIFO (``mkfifo``), as on the process runtime; bashkit's
        own FIFOs are files that never block, but the files API moves regular files only."""
        try:
            kind = self.fs.stat(real).get("file_type")
        except RuntimeError:
            return
        if kind == "fifo":
            raise NotRegularFile("FIFO", path)

    def _kind(self, real: str) -> str | None:
        entry = vfs.lstat(self.fs, real)
        return None if entry is None else entry.kind

    def _kind_of(self, path: str) -> str | None:
        try:
            real = self._resolve(path, missing="last")
        except OSError:
            return None
        return self._kind(real)


_WIPED: list[bashkit.FileSystem] = []


def wiped_fs() -> bashkit.FileSystem:
    """One empty filesystem shared by every wiped disk (their calls are refused before it)."""
    if not _WIPED:
        empty = bashkit.FileSystem()
        for item in empty.read_dir("/"):  # bashkit's own /dev, /home, /tmp
            empty.remove("/" + str(item["name"]), recursive=True)
        _WIPED.append(empty)
    return _WIPED[0]


def _absolute(path: str) -> str:
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        raise ValueError("sandbox paths must be absolute and contain no NUL")
    return utf8(path)  # undecodable bytes in a query string
