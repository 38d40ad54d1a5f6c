"""File contents of a state directory: one host file per SHA-256, shared by every snapshot.

A blob is written before the manifest naming it commits, so a crash leaves at worst a blob
nothing names, which ``Blobs.gc`` removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Blobs"]


class Blobs:
    """File contents by SHA-256, one host file each, under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(mode=0o700, exist_ok=True)
        self._known = {entry.name for entry in directory.iterdir() if len(entry.name) == 64}

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self._known:
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temporary, self.directory / digest)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
            self._known.add(digest)
        return digest

    def get(self, digest: str) -> bytes:
        return (self.directory / digest).read_bytes()

    def gc(self, referenced: set[str]) -> int:
        """Remove every blob no manifest names (and temporary files a crash left); how many."""
        removed = 0
        for entry in list(self.directory.iterdir()):
            if entry.name in referenced:
                continue
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
                removed += 1
            self._known.discard(entry.name)
        return removed
