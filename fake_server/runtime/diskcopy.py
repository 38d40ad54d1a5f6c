"""A fork's disk: a full copy of another sandbox's filesystem (files, directories, symlinks,
modes), independent from then on."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from fake_server.runtime.disk import SandboxDisk

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["copy_disk"]

#: Device nodes every disk provides itself; they are not files to copy.
_DEVICES = frozenset({"/dev"})


def copy_disk(source: SandboxDisk, make: Callable[[], SandboxDisk] = SandboxDisk) -> SandboxDisk:
    """A new disk (from ``make``) holding exactly what ``source`` holds now; the buckets
    mounted in it are not copied (a fork starts with no disk attached)."""
    if source.wiped:
        raise RuntimeError("the sandbox disk was wiped (sandbox destroyed)")
    target = make()
    src, dst = source.fs, target.fs
    for item in dst.read_dir("/"):
        if "/" + str(item["name"]) not in _DEVICES:
            dst.remove("/" + str(item["name"]), recursive=True)
    stack = ["/"]
    while stack:
        directory = stack.pop()
        for item in src.read_dir(directory):
            path = posixpath.join(directory, str(item["name"]))
            if path in _DEVICES:
                continue
            meta = item.get("metadata", {})
            kind = meta.get("file_type")
            mode = int(meta.get("mode", 0o644)) & 0o7777
            if kind == "directory":
                dst.mkdir(path, recursive=True)
                stack.append(path)
            elif kind == "symlink":
                dst.symlink(src.read_link(path), path)
                continue
            else:
                dst.write_file(path, bytes(src.read_file(path)))
            dst.chmod(path, mode)
    return target
