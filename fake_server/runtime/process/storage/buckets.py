"""Account disks on the process runtime: a host directory per bucket, bound into sandboxes.

A bucket's files are one directory in the fake's directory (``BucketDirs``), so they go at
close, or in the state directory of ``serve --state-dir``, where they outlive the fake.
Attaching binds it (or its ``sub_path`` folder) on the mount path inside the
sandbox's mount namespace (``SandboxRoot.bind``): no copy, so sandboxes sharing a disk see
each other's writes at once, and the files API sees them too. Both paths are resolved with
``DirDisk``'s walk, inside the sandbox and inside the bucket, so a symlink planted in either
leads nowhere outside.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

from fake_server.runtime.process.storage.dirdisk import DirDisk
from fake_server.runtime.process.storage.rootdir import remove_tree, shift_owners

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from fake_server.runtime.process.storage.rootfs import SandboxRoot

__all__ = ["BucketDirs", "bind", "unbind"]


class BucketDirs:
    """The host directories of one fake's buckets, in the directory ``base`` names (made on
    first use; asked late because the fake's own directory is made with its first sandbox)."""

    def __init__(
        self, base: Callable[[], Path], owner: Callable[[], tuple[int, int] | None] = lambda: None
    ) -> None:
        """``owner()``: the host uid and gid of the sandboxes' root (``idmap``), who owns each
        bucket's directory and what the fake writes in it; ``None``: the fake itself."""
        self._base = base
        self._owner = owner
        self._dirs: dict[str, Path] = {}

    def get(self, bucket: str) -> Path:
        """The directory of ``bucket`` (an opaque name), shared by every sandbox mounting it."""
        path = self._dirs.get(bucket)
        if path is None:
            digest = hashlib.sha256(bucket.encode()).hexdigest()[:24]
            path = self._base() / digest
            path.mkdir(parents=True, exist_ok=True, mode=0o755)
            owner = self._owner()
            if owner is not None:  # a kept bucket of a version before id ranges too
                shift_owners(path, owner[0])
            self._dirs[bucket] = path
        return path

    @property
    def owner(self) -> tuple[int, int] | None:
        return self._owner()

    def clear(self, base: Path | None) -> None:
        """Remove every bucket's directory: those made here, and every other one in ``base``
        (a kept base holds those of earlier starts too). A reset starts every bucket empty."""
        made, self._dirs = self._dirs, {}
        found = set(made.values())
        if base is not None and base.is_dir():
            found.update(child for child in base.iterdir() if child.is_dir())
        for path in found:
            remove_tree(path)


def bind(
    rootfs: SandboxRoot,
    disk: DirDisk,
    store: Path,
    mount_path: str,
    sub_path: str,
    owner: tuple[int, int] | None = None,
) -> None:
    """Bind ``store`` (or its ``sub_path`` folder, made if missing, given to ``owner``) on
    ``mount_path``.

    ``FileExistsError`` when ``mount_path`` runs through a file of the sandbox,
    ``NotADirectoryError`` when ``sub_path`` runs through a file of the bucket."""
    bucket = DirDisk(store, owner=owner)
    try:
        target = disk.open_dir(mount_path)
    except NotADirectoryError:
        raise FileExistsError("mount_path names a file in the sandbox") from None
    try:
        rootfs.bind(lambda: bucket.open_dir("/" + sub_path), target)
    finally:
        os.close(target)


def unbind(rootfs: SandboxRoot, disk: DirDisk, mount_path: str) -> None:
    """Undo ``bind`` (what was mounted below ``mount_path`` goes too)."""
    target = disk.open_dir(mount_path)
    try:
        rootfs.unbind(target)
    finally:
        os.close(target)
