"""Host-side tar archives for directory sync, with Python's ``tarfile``.

The rules are in docs/provider-execution.md#the-four-transfers.

* ``build_archive`` packs a host directory as entries under ``.``, storing symlinks as links
  (never dereferenced) and skipping excluded names and special files.
* ``validate_archive`` reads a downloaded archive *completely* before anything is written: it
  refuses absolute names, ``..``, backslashes, NUL, link targets that leave the root (also
  through a symlink the archive itself creates), entry types other than file, directory,
  symlink and hard link, and a declared total size over the limit. Only then does
  ``extract_archive`` run, and it extracts with tarfile's strict ``data`` filter as well, so
  a link already on the host cannot redirect a write either.

Everything here blocks; callers run it in a worker thread.
"""

from __future__ import annotations

import os
import posixpath
import re
import tarfile
from functools import lru_cache
from typing import TYPE_CHECKING

from ._errors import CreateosError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = [
    "MAX_EXTRACT_BYTES",
    "SYMLINK_DESTINATION",
    "UNSAFE_ARCHIVE",
    "build_archive",
    "extract_archive",
    "extract_into",
    "is_excluded",
    "validate_archive",
]

MAX_EXTRACT_BYTES = 10 * 1024**3
UNSAFE_ARCHIVE = "CreateOS archive contains unsafe entries or exceeds the extraction limit."
SYMLINK_DESTINATION = "CreateOS archive destination cannot be a symlink."
_MAX_LINK_HOPS = 40
_ALLOWED_TYPES = {tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE}
_ALLOWED_TYPES.add(tarfile.LNKTYPE)
_FILE_TYPES = {tarfile.REGTYPE, tarfile.AREGTYPE}


# -- exclusions ---------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Glob to regex: ``**`` spans directories, ``*``/``?``/``[...]`` stay within one name."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (close := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : close]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def is_excluded(name: str, patterns: Sequence[str]) -> bool:
    """Whether an entry name matches ``P``, ``P/**``, ``**/P`` or ``**/P/**`` for some pattern.

    The name is taken relative to the archive root (a leading ``./`` and trailing ``/`` are
    ignored); names starting with a dot are matched like any other (as GNU tar does).
    """
    if name.startswith("./"):
        name = name[2:]
    name = name.rstrip("/")
    if not name or name == ".":
        return False
    for pattern in patterns:
        for variant in (pattern, f"{pattern}/**", f"**/{pattern}", f"**/{pattern}/**"):
            if _glob_regex(variant).fullmatch(name):
                return True
    return False


# -- building ------------------------------------------------------------------------------------


def build_archive(source: Path, archive: Path, exclude: Sequence[str] = ()) -> int:
    """Write ``source`` as a tar of entries under ``.``; return the number of regular files.

    Symlinks are stored as links, never followed; sockets, FIFOs and devices are skipped. The
    archive is written to ``archive`` (which must not exist) with owner-only permissions.
    """
    files = 0

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        nonlocal files
        if info.name != "." and is_excluded(info.name, exclude):
            return None
        if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
            return None
        if info.isreg():
            files += 1
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    fd = os.open(archive, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with (
        os.fdopen(fd, "wb") as raw,
        tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        tar.dereference = False
        tar.add(str(source), arcname=".", recursive=True, filter=keep)
    return files


# -- validation ----------------------------------------------------------------------------------


def _unsafe() -> CreateosError:
    return CreateosError(UNSAFE_ARCHIVE)


def _bad_path(path: str) -> bool:
    return (
        path == ""
        or path.startswith("/")
        or "\\" in path
        or "\x00" in path
        or ".." in path.split("/")
    )


def _resolve(path: str, links: dict[str, str]) -> list[str] | None:
    """Resolve ``path`` (relative to the root) through the archive's own symlinks.

    Returns the resolved components, or None if the path leaves the root or loops.
    """
    parts: list[str] = []
    todo = [p for p in path.split("/") if p not in ("", ".")]
    hops = 0
    while todo:
        part = todo.pop(0)
        if part == "..":
            if not parts:
                return None
            parts.pop()
            continue
        if part in (".", ""):
            continue
        candidate = "/".join([*parts, part])
        target = links.get(candidate)
        if target is None:
            parts.append(part)
            continue
        hops += 1
        if hops > _MAX_LINK_HOPS or target.startswith("/"):
            return None
        # Stored targets are relative to the root, so resolution restarts there.
        parts = []
        todo = [p for p in target.split("/") if p not in ("", ".")] + todo
    return parts


def validate_archive(archive: Path, *, limit: int = MAX_EXTRACT_BYTES) -> int:
    """Check every entry before extraction; return the number of regular files.

    Raises the spec's single ``UNSAFE_ARCHIVE`` error for anything it does not like, including
    an archive that cannot be read at all.
    """
    total = 0
    files = 0
    links: dict[str, str] = {}
    members: list[tarfile.TarInfo] = []
    try:
        with tarfile.open(archive, mode="r:") as tar:
            for info in tar:
                members.append(info)
                total += max(info.size, 0)
                if total > limit:
                    raise _unsafe()
    except (tarfile.TarError, OSError, EOFError, ValueError, UnicodeError):
        raise _unsafe() from None
    for info in members:
        name = info.name.rstrip("/") if info.name not in ("/",) else info.name
        if info.type not in _ALLOWED_TYPES or _bad_path(name):
            raise _unsafe()
        if not info.isdir() and posixpath.normpath(name) == ".":
            raise _unsafe()  # only a directory may stand for the root itself
        if info.type in _FILE_TYPES:
            files += 1
        if info.issym() or info.islnk():
            link = info.linkname
            if not link or link.startswith("/") or "\\" in link or "\x00" in link:
                raise _unsafe()
            base = posixpath.dirname(name) if info.issym() else ""
            normalized = posixpath.normpath(posixpath.join(base, link))
            if normalized == ".." or normalized.startswith("../"):
                raise _unsafe()
            if info.issym():
                links[posixpath.normpath(name)] = posixpath.join(base, link)
    for info in members:
        name = posixpath.normpath(info.name)
        # Where the entry itself lands: its parent must not leave the root through a link.
        parent = posixpath.dirname(name)
        if parent and _resolve(parent, links) is None:
            raise _unsafe()
        if info.issym() and _resolve(links[name], links) is None:
            raise _unsafe()
        if info.islnk() and _resolve(info.linkname, links) is None:
            raise _unsafe()
    return files


def _strict_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter, but directories keep their modes (owner rwx always kept).

    The root entry (``.``) is the target itself, whose mode the caller decides.

    The ``data`` filter already strips set-id bits and group/other write bits from files; it
    would give every directory the default mode, which loses what the sandbox had.
    """
    filtered = tarfile.data_filter(member, dest)
    if filtered is not None and member.isdir() and posixpath.normpath(member.name) != ".":
        filtered = filtered.replace(mode=(member.mode & 0o755) | 0o700, deep=False)
    return filtered


def extract_archive(archive: Path, target: Path) -> None:
    """Extract a validated archive into the existing directory ``target``, strictly."""
    try:
        with tarfile.open(archive, mode="r:") as tar:
            tar.extractall(target, filter=_strict_filter)
    except tarfile.FilterError:
        raise _unsafe() from None


def extract_into(archive: Path, target: Path, mode: int | None) -> None:
    """Create ``target`` (``mode``, default 0700) and extract a validated archive into it.

    A symlink at ``target`` is refused: it would redirect the whole tree elsewhere.
    """
    if target.is_symlink():
        raise CreateosError(SYMLINK_DESTINATION)
    target.mkdir(mode=mode if mode is not None else 0o700, parents=True, exist_ok=True)
    extract_archive(archive, target)
    if mode is not None:
        target.chmod(mode)
