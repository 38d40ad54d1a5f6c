"""Persistent-disk mounts: one shared filesystem per bucket, mounted into every sandbox disk
that attaches it.

A bucket is one bashkit ``FileSystem``; attaching mounts that very object at the mount path
(the interpreter through ``Bash.mount``, the files API through ``MountingDisk``), so a write
in one sandbox is visible in every other at once, with no copy, and survives the sandbox.
"""

from __future__ import annotations

import posixpath

import bashkit

from fake_server.runtime import vfs
from fake_server.runtime.disk import SandboxDisk

__all__ = ["MountingDisk", "empty_bucket"]


def empty_bucket() -> bashkit.FileSystem:
    """A filesystem with nothing in it (bashkit starts one with /dev, /home and /tmp)."""
    fs = bashkit.FileSystem()
    for item in fs.read_dir("/"):
        kind = item.get("metadata", {}).get("file_type")
        fs.remove("/" + str(item["name"]), recursive=kind == "directory")
    return fs


class _BucketView(SandboxDisk):
    """The file API of ``SandboxDisk`` over a bucket (no image installed)."""

    def __init__(self, fs: bashkit.FileSystem) -> None:  # no super(): no image
        self.fs = fs
        self._wiped = False
        self.mounts = {}


class MountingDisk(SandboxDisk):
    """A sandbox disk whose file API sees the buckets mounted into it."""

    def mount(self, path: str, fs: bashkit.FileSystem) -> None:
        vfs.mkdirs(self.fs, path)
        self.mounts[path] = fs

    def unmount(self, path: str) -> None:
        self.mounts.pop(path, None)

    def _route(self, path: str) -> tuple[SandboxDisk, str]:
        if isinstance(path, str) and self.mounts:
            normal = posixpath.normpath(path) if path.startswith("/") else path
            for point in sorted(self.mounts, key=len, reverse=True):
                if normal == point or normal.startswith(point + "/"):
                    inner = "/" + normal[len(point) :].lstrip("/")
                    return _BucketView(self.mounts[point]), inner
        return self, path

    def read_file(self, path: str) -> bytes:
        disk, inner = self._route(path)
        return SandboxDisk.read_file(disk, inner)

    def write_file(self, path: str, data: bytes, *, mode: int | None = None) -> None:
        disk, inner = self._route(path)
        SandboxDisk.write_file(disk, inner, data, mode=mode)

    def exists(self, path: str) -> bool:
        disk, inner = self._route(path)
        return SandboxDisk.exists(disk, inner)

    def is_dir(self, path: str) -> bool:
        disk, inner = self._route(path)
        return SandboxDisk.is_dir(disk, inner)

    def is_file(self, path: str) -> bool:
        disk, inner = self._route(path)
        return SandboxDisk.is_file(disk, inner)

    def mode(self, path: str) -> int:
        disk, inner = self._route(path)
        return SandboxDisk.mode(disk, inner)

    def remove(self, path: str) -> None:
        disk, inner = self._route(path)
        if disk is not self and inner == "/":
            raise PermissionError(1, "cannot remove a mount point", path)
        SandboxDisk.remove(disk, inner)

    def wipe(self) -> None:
        """Destroy: the sandbox's own files go; mounted buckets are left as they are."""
        self.mounts.clear()
        super().wipe()
