"""A bashkit sandbox disk whose files are put in place on first use.

A restart of ``serve --state-dir`` brings back every sandbox at once, paused; making each
one's in-memory filesystem then would cost a millisecond or two per sandbox for files most
will not touch soon. ``DeferredDisk`` makes it when something first reads ``fs`` (a command,
the files API, a fork) and is wiped without ever making it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import bashkit

from fake_server.runtime import capacity
from fake_server.runtime.bashkit.disk import wiped_fs
from fake_server.runtime.bashkit.mounts import MountingDisk

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DeferredDisk"]


class DeferredDisk(MountingDisk):
    """``fill(disk)`` puts the files into ``disk.fs`` (bashkit's fresh filesystem) once."""

    def __init__(self, fill: Callable[[DeferredDisk], None]) -> None:  # no super(): nothing yet
        self._fill: Callable[[DeferredDisk], None] | None = fill
        self._fs: bashkit.FileSystem | None = None
        self._made = False
        self._wiped = False
        self.mounts = {}

    @property
    def fs(self) -> bashkit.FileSystem:
        if self._fs is None:
            fill, self._fill = self._fill, None
            self._fs = capacity.create(bashkit.FileSystem)
            self._made = True
            if fill is not None:
                fill(self)
        return self._fs

    @fs.setter
    def fs(self, value: bashkit.FileSystem) -> None:
        self._fs = value

    @property
    def loaded(self) -> bool:
        """Whether the files were put in place (after that, a plain ``MountingDisk``)."""
        return self._made

    def install_image(self) -> None:
        """Fill with the image a new sandbox gets (the files of a sandbox never written)."""
        self._install_image()

    def wipe(self) -> None:
        if self._fs is None:  # destroyed before any use: nothing to make, nothing to remove
            self._fill = None
            self.mounts.clear()
            self._wiped = True
            self._fs = wiped_fs()
            return
        super().wipe()
