"""A fork's disk: a full copy of another sandbox's filesystem (files, directories, symlinks,
modes), independent from then on."""

from __future__ import annotations

import posixpath

from fake_server.runtime.disk import SandboxDisk

__all__ = ["copy_disk"]

#: Device nodes every disk provides itself; they are not files to copy.
_DEVICES = frozenset({"/dev"})


def copy_disk(source: SandboxDisk) -> SandboxDisk:
    """A new disk holding exactly what ``source`` holds now."""
    if source.wiped:
        raise RuntimeError("the sandbox disk was wiped (sandbox destroyed)")
    target = SandboxDisk()
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
