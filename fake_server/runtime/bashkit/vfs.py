"""Path resolution over a bashkit ``FileSystem`` with GNU semantics.

bashkit's own lookups follow absolute symlinks but resolve relative link targets against the
root instead of the link's directory, and its errors are bare ``RuntimeError("io error: …")``.
Everything in the runtime that walks paths (the disk API, ``realpath``, ``tar``) goes through
this module instead, so symlinks behave as on Linux and errors are real ``OSError`` subclasses.
"""

from __future__ import annotations

import errno
import os
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import bashkit

__all__ = [
    "MAXSYMLINKS",
    "Entry",
    "Missing",
    "abspath",
    "list_dir",
    "lstat",
    "mkdirs",
    "os_error",
    "physical",
    "resolve",
]

#: Linux's limit on symlinks followed during one lookup.
MAXSYMLINKS = 40

Missing = Literal["all", "last", "none"]


@dataclass(frozen=True, slots=True)
class Entry:
    """What ``lstat`` knows about one path (never follows a final symlink)."""

    kind: Literal["file", "directory", "symlink"]
    size: int
    mode: int
    mtime: float


def os_error(exc: BaseException, path: str = "") -> OSError:
    """Turn bashkit's ``RuntimeError("io error: …")`` into the matching ``OSError``."""
    text = str(exc).lower()
    table = (
        ("too large", errno.EFBIG),
        ("filesystem full", errno.ENOSPC),
        ("no space left", errno.ENOSPC),
        ("not a directory", errno.ENOTDIR),
        ("is a directory", errno.EISDIR),
        ("not empty", errno.ENOTEMPTY),
        ("exists", errno.EEXIST),
        ("not found", errno.ENOENT),
        ("permission", errno.EACCES),
        ("read-only", errno.EROFS),
    )
    for needle, code in table:
        if needle in text:
            return _oserror(code, path)
    return OSError(errno.EIO, os.strerror(errno.EIO), path or None)


def _oserror(code: int, path: str) -> OSError:
    return OSError(code, os.strerror(code), path or None)


def abspath(path: str, cwd: str = "/") -> str:
    """Join ``path`` onto ``cwd`` without touching ``..`` (symlinks decide what it means)."""
    if not path.startswith("/"):
        path = posixpath.join(cwd or "/", path)
    return "/" + "/".join(p for p in path.split("/") if p)


def lstat(fs: bashkit.FileSystem, path: str) -> Entry | None:
    """Metadata of ``path`` itself, or ``None`` when it does not exist.

    Only call this with a *physical* parent (no symlinks before the last component).
    """
    try:
        info: dict[str, Any] = fs.stat(path)
    except RuntimeError:
        return None
    return _entry(info)


def list_dir(fs: bashkit.FileSystem, path: str) -> list[tuple[str, Entry]]:
    """The entries of the physical directory ``path``, sorted by name, with their metadata."""
    try:
        items = fs.read_dir(path)
    except RuntimeError as exc:
        raise os_error(exc, path) from None
    return sorted((str(item["name"]), _entry(item.get("metadata", {}))) for item in items)


def _entry(info: dict[str, Any]) -> Entry:
    raw = info.get("file_type")
    kind: Literal["file", "directory", "symlink"] = (
        "directory" if raw == "directory" else "symlink" if raw == "symlink" else "file"
    )
    return Entry(
        kind=kind,
        size=int(info.get("size", 0)),
        mode=int(info.get("mode", 0)) & 0o7777,
        mtime=float(info.get("modified", 0.0)),
    )


def resolve(
    fs: bashkit.FileSystem,
    path: str,
    *,
    cwd: str = "/",
    missing: Missing = "last",
    follow_last: bool = True,
) -> str:
    """Canonicalize ``path`` like GNU ``realpath``: the physical path with every link followed.

    ``missing`` says which components may be absent: ``"all"`` (``realpath -m``), ``"last"``
    (plain ``realpath``), ``"none"`` (``realpath -e``). ``follow_last=False`` resolves only the
    parent (what ``lstat``, ``rm`` and ``tar -c`` without ``-h`` need). Raises
    ``FileNotFoundError``, ``NotADirectoryError`` or ``OSError(ELOOP)``.
    """
    pending = [p for p in abspath(path, cwd).split("/") if p]
    pending.reverse()  # a stack: next component last
    current = "/"
    links = 0
    absent = False  # once a component is missing, the rest is resolved lexically (-m)
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":
            current = posixpath.dirname(current) or "/"
            continue
        candidate = posixpath.join(current, name)
        is_last = not pending
        if absent:
            current = candidate
            continue
        entry = lstat(fs, candidate)
        if entry is None:
            if missing == "all" or (missing == "last" and is_last):
                absent = True
                current = candidate
                continue
            raise _oserror(errno.ENOENT, path)
        if entry.kind == "symlink" and (follow_last or not is_last):
            links += 1
            if links > MAXSYMLINKS:
                raise _oserror(errno.ELOOP, path)
            target = _read_link(fs, candidate, path)
            if target.startswith("/"):
                current = "/"
            parts = [p for p in target.split("/") if p]
            pending.extend(reversed(parts))
            continue
        if entry.kind != "directory" and not is_last:
            if missing == "all":
                absent = True
                current = candidate
                continue
            raise _oserror(errno.ENOTDIR, path)
        current = candidate
    return current


def _read_link(fs: bashkit.FileSystem, physical_path: str, shown: str) -> str:
    try:
        return str(fs.read_link(physical_path))
    except RuntimeError as exc:
        raise os_error(exc, shown) from None


def physical(fs: bashkit.FileSystem, path: str, *, cwd: str = "/") -> str:
    """``path`` with its parent resolved, the last component kept as is (for lstat/unlink)."""
    full = abspath(path, cwd)
    if full == "/":
        return "/"
    parent, name = posixpath.split(full)
    if name in (".", ".."):
        return resolve(fs, full, missing="none")
    return posixpath.join(resolve(fs, parent, missing="none"), name)


def mkdirs(fs: bashkit.FileSystem, path: str, *, cwd: str = "/") -> str:
    """``mkdir -p`` that follows symlinks to directories; returns the physical directory."""
    current = "/"
    for name in [p for p in abspath(path, cwd).split("/") if p]:
        current = resolve(fs, posixpath.join(current, name), missing="last")
        entry = lstat(fs, current)
        if entry is None:
            try:
                fs.mkdir(current)
            except RuntimeError as exc:
                raise os_error(exc, path) from None
        elif entry.kind != "directory":
            raise _oserror(errno.ENOTDIR if entry.kind == "file" else errno.ENOENT, path)
    return current
