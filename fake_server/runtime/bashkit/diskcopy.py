"""A fork's disk: a full copy of another sandbox's filesystem (files, directories, symlinks,
modes), independent from then on.

bashkit 0.20's in-memory filesystem offers no copy-on-write and no way to share a file's bytes
between two filesystems (its snapshots serialise the whole tree, about 0.3 s for 50 MiB), so
every file is read and written once. The copy does nothing else: no image is installed first,
and a mode is set only where it differs from what bashkit gives a new file or directory.
"""

from __future__ import annotations

import posixpath

from fake_server.runtime.bashkit.disk import SandboxDisk

__all__ = ["copy_disk"]

#: Device nodes every disk provides itself; they are not files to copy.
_DEVICES = frozenset({"/dev"})
#: Modes bashkit gives a new file and a new directory.
_FILE_MODE, _DIR_MODE = 0o644, 0o755


def copy_disk(source: SandboxDisk, make: type[SandboxDisk] = SandboxDisk) -> SandboxDisk:
    """A new disk (a ``make``, without an image) holding exactly what ``source`` holds now; the
    buckets mounted in it are not copied (a fork starts with no disk attached)."""
    if source.wiped:
        raise RuntimeError("the sandbox disk was wiped (sandbox destroyed)")
    target = make(image=False)
    src, dst = source.fs, target.fs
    for item in dst.read_dir("/"):  # bashkit's own /home and /tmp
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
            mode = int(meta.get("mode", _FILE_MODE)) & 0o7777
            if kind == "directory":
                dst.mkdir(path)
                stack.append(path)
                if mode != _DIR_MODE:
                    dst.chmod(path, mode)
            elif kind == "symlink":
                dst.symlink(src.read_link(path), path)
            else:
                dst.write_file(path, src.read_file(path))
                if mode != _FILE_MODE:
                    dst.chmod(path, mode)
    return target
