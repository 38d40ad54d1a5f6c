"""Bashkit filesystems as snapshots for ``serve --state-dir``: a manifest per filesystem,
contents as shared blobs (``Blobs``: where persistence keeps them).

bashkit's in-memory filesystems (bashkit sandboxes, template images, disk buckets) have no
snapshot of their own that is cheap to take often, so a snapshot walks the tree (metadata
only: about 0.3 ms for a fresh sandbox) and reads, hashes and stores only the files whose
size, mtime or mode changed since the previous snapshot of the same filesystem. Blobs are
named by their SHA-256 and shared (every sandbox's image scripts are stored once); a blob is
written before the manifest naming it commits, so a crash leaves at worst a blob nothing
names, which ``Blobs.gc`` removes.

A manifest is a list of ``[path, kind, mode, size, mtime, ref]`` (``kind``: ``d``, ``f`` or
``l``; ``ref``: the blob of a file, the target of a symlink), parents before children.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import bashkit

    from fake_server.runtime.api import Blobs

__all__ = ["Manifest", "restore", "same_files", "snapshot", "unchanged"]

Manifest = list[list[Any]]

#: Device nodes every bashkit filesystem provides itself.
_DEVICES = frozenset({"/dev"})
#: Modes bashkit gives a new file and a new directory.
_FILE_MODE, _DIR_MODE = 0o644, 0o755
_KINDS = {"directory": "d", "symlink": "l"}


def _walk(fs: bashkit.FileSystem) -> list[tuple[str, str, int, int, float]]:
    """``(path, kind, mode, size, mtime)`` of every entry, parents before children, in one
    order for one tree (bashkit lists a directory in no fixed order)."""
    found = []
    stack = ["/"]
    while stack:
        directory = stack.pop()
        prefix = directory if directory == "/" else directory + "/"
        for item in sorted(fs.read_dir(directory), key=_name):
            path = prefix + str(item["name"])
            if path in _DEVICES:
                continue
            meta = item.get("metadata", {})
            kind = _KINDS.get(meta.get("file_type"), "f")
            mode = int(meta.get("mode", 0)) & 0o7777
            found.append((path, kind, mode, int(meta.get("size", 0)), float(meta["modified"])))
            if kind == "d":
                stack.append(path)
    return found


def _name(item: dict[str, Any]) -> str:
    return str(item["name"])


def unchanged(fs: bashkit.FileSystem, manifest: Manifest) -> bool:
    """Whether ``fs`` still holds what ``manifest`` describes (by metadata)."""
    walked = _walk(fs)
    return len(walked) == len(manifest) and all(
        tuple(entry[:5]) == seen for entry, seen in zip(manifest, walked, strict=True)
    )


def snapshot(
    fs: bashkit.FileSystem,
    blobs: Blobs,
    previous: Manifest | None = None,
    *,
    copied_from: Manifest | None = None,
    copied_before: float = float("inf"),
) -> Manifest:
    """The manifest of ``fs`` now, storing the contents ``previous`` does not already name.

    ``copied_from``: the manifest of a filesystem ``fs`` was a copy of (a fork's source, the
    image), whose blob a file of the same path, size and mode reuses without being read, if
    it was last written no later than ``copied_before`` (wall time: the copy's end).
    """
    known = {entry[0]: entry for entry in previous or ()}
    copied = {entry[0]: entry for entry in copied_from or ()}
    manifest: Manifest = []
    for path, kind, mode, size, mtime in _walk(fs):
        ref = ""
        if kind == "l":
            ref = str(fs.read_link(path))
        elif kind == "f":
            old = known.get(path)
            twin = copied.get(path)
            if old is not None and old[1:5] == [kind, mode, size, mtime]:
                ref = old[5]
            elif twin is not None and twin[1:4] == [kind, mode, size] and mtime <= copied_before:
                ref = twin[5]
            else:
                data = fs.read_file(path)
                size = len(data)
                ref = blobs.put(data)
        manifest.append([path, kind, mode, size, mtime, ref])
    return manifest


def same_files(one: Manifest, other: Manifest) -> bool:
    """Whether two manifests describe the same tree and contents (mtimes aside)."""
    return len(one) == len(other) and all(
        a[:4] == b[:4] and a[5] == b[5] for a, b in zip(one, other, strict=True)
    )


def restore(fs: bashkit.FileSystem, manifest: Manifest, read: Callable[[str], bytes]) -> None:
    """Fill ``fs`` (bashkit's fresh filesystem) with what ``manifest`` describes."""
    wanted = {entry[0] for entry in manifest}
    for item in fs.read_dir("/"):  # bashkit's own /home and /tmp, unless saved
        path = "/" + str(item["name"])
        if path not in _DEVICES and path not in wanted:
            fs.remove(path, recursive=True)
    for path, kind, mode, _size, _mtime, ref in manifest:
        if kind == "d":
            if not fs.exists(path):
                fs.mkdir(path, recursive=True)
            if mode != _DIR_MODE:
                fs.chmod(path, mode)
        elif kind == "l":
            fs.symlink(ref, path)
        else:
            fs.write_file(path, read(ref))
            if mode != _FILE_MODE:
                fs.chmod(path, mode)
