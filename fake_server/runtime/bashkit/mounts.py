"""Persistent-disk mounts: one shared store per bucket, mounted into every sandbox disk that
attaches it.

A bucket is a few bashkit ``FileSystem`` objects (``Bucket``); attaching mounts those very
objects at the mount path (the interpreter through ``Bash.mount``, the files API through
``MountingDisk``), so a write in one sandbox is visible in every other at once, with no copy,
and survives the sandbox.
"""

from __future__ import annotations

import posixpath

import bashkit

from fake_server.runtime.bashkit import vfs
from fake_server.runtime.bashkit.disk import SandboxDisk

__all__ = ["Bucket", "MountingDisk", "empty_bucket"]


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


class Bucket:
    """One bucket's files, mountable whole or by sub-folder (``sub_path``).

    The root and every sub-folder mounted on its own so far are separate filesystems nested in
    one another: a root mount sees ``sub/`` as the sub-folder's filesystem mounted under it, a
    ``sub_path="sub"`` mount sees that filesystem alone. Every view holds the same objects, so
    two sub-paths see different trees and the root sees both, with no copy.
    """

    def __init__(self) -> None:
        self._parts: dict[str, bashkit.FileSystem] = {"": empty_bucket()}
        #: Live mounts: (sandbox disk, mount path, sub_path).
        self._users: list[tuple[MountingDisk, str, str]] = []

    @property
    def parts(self) -> dict[str, bashkit.FileSystem]:
        """The bucket's filesystems by sub-folder ("" is the root), for saving them."""
        return dict(self._parts)

    @classmethod
    def restored(cls, parts: dict[str, bashkit.FileSystem]) -> Bucket:
        """A bucket holding the saved ``parts`` (``parts`` must include the root, "")."""
        bucket = cls()
        bucket._parts = dict(parts)
        return bucket

    def mount(self, disk: MountingDisk, mount_path: str, sub_path: str) -> None:
        """Mount the bucket (or its ``sub_path`` folder) at ``mount_path`` in ``disk``."""
        sub_path = _folder(sub_path)
        self._part(sub_path)
        vfs.mkdirs(disk.fs, mount_path)
        self._users = [u for u in self._users if not u[0].wiped]  # destroyed sandboxes
        self._users.append((disk, mount_path, sub_path))
        for key, fs in self._parts.items():
            if _under(key, sub_path):
                disk.mounts[_join(mount_path, key[len(sub_path) :])] = fs

    def unmount(self, disk: MountingDisk, mount_path: str) -> None:
        """Drop the mount at ``mount_path`` in ``disk`` and the sub-folders nested in it."""
        self._users = [u for u in self._users if not (u[0] is disk and u[1] == mount_path)]
        ours = {id(fs) for fs in self._parts.values()}
        for point in list(disk.mounts):
            inside = point == mount_path or point.startswith(mount_path.rstrip("/") + "/")
            if inside and id(disk.mounts[point]) in ours:
                del disk.mounts[point]

    def _part(self, sub_path: str) -> None:
        """Give ``sub_path`` its own filesystem, moving what the bucket already holds there.

        Raises ``NotADirectoryError`` when the bucket holds a file on that path.
        """
        if sub_path in self._parts:
            return
        parent = max((k for k in self._parts if _under(sub_path, k)), key=len)
        inner = "/" + sub_path[len(parent) :].lstrip("/")
        source, part = self._parts[parent], empty_bucket()
        inner = vfs.mkdirs(source, inner)  # the mount point; a file on the way raises
        _move_children(source, inner, part)
        self._parts[sub_path] = part
        for disk, mount_path, mounted in self._users:
            if _under(sub_path, mounted) and not disk.wiped:
                disk.mounts[_join(mount_path, sub_path[len(mounted) :])] = part


def _folder(sub_path: str) -> str:
    """``sub_path`` as a bucket key: no leading, trailing or doubled slashes; "" is the root."""
    normal = posixpath.normpath("/" + sub_path).lstrip("/") if sub_path else ""
    return "" if normal in ("", ".") else normal


def _under(key: str, folder: str) -> bool:
    return folder == "" or key == folder or key.startswith(folder + "/")


def _join(mount_path: str, rest: str) -> str:
    rest = rest.lstrip("/")
    return posixpath.join(mount_path, rest) if rest else mount_path


def _move_children(source: bashkit.FileSystem, inner: str, target: bashkit.FileSystem) -> None:
    """Move what the folder ``inner`` of ``source`` holds to the root of ``target`` (done once,
    when a sub-folder is first mounted on its own)."""
    stack = [(inner, "/")]
    while stack:
        src, dst = stack.pop()
        for name, entry in vfs.list_dir(source, src):
            here, there = posixpath.join(src, name), posixpath.join(dst, name)
            if entry.kind == "symlink":
                target.symlink(source.read_link(here), there)
                continue
            if entry.kind == "directory":
                target.mkdir(there, recursive=True)
                stack.append((here, there))
            else:
                target.write_file(there, source.read_file(here))
            target.chmod(there, entry.mode)
    for name, entry in vfs.list_dir(source, inner):
        source.remove(posixpath.join(inner, name), recursive=entry.kind == "directory")
