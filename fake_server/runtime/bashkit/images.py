"""Template builds on the bashkit runtime: ``RUN`` steps in bashkit's bash on a private disk.

The build runs on the fake's clock inside the create request (its result is then revealed
step by step, ``models.resources.templates``). Its image is that disk; a sandbox made from it gets a
copy of the files the build wrote or changed, over the image every bashkit sandbox has.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from fake_server.runtime.bashkit import vfs
from fake_server.runtime.bashkit.disk import SandboxDisk
from fake_server.runtime.bashkit.shell import BashkitRunner

if TYPE_CHECKING:
    from fake_server.clock import Clock
    from fake_server.runtime.bashkit.commands import CommandRegistry

__all__ = ["BashkitBuilder", "BashkitImage", "seed"]


class BashkitImage:
    """A template's files: the build's disk (kept in memory, saved as a snapshot)."""

    runtime = "bashkit"

    def __init__(self, disk: SandboxDisk) -> None:
        self.disk = disk
        self.size = disk.used_bytes()

    def saved(self) -> None:
        """Nothing: persistence snapshots ``disk`` through the runtime's ``FileKeeper``."""
        return None

    def discard(self) -> None:
        self.disk.wipe()


class BashkitBuilder:
    """One build: each ``RUN`` step is a fresh bashkit interpreter over the build's disk."""

    #: The build runs on the fake's clock, within the create request.
    background = False

    def __init__(self, clock: Clock, commands: CommandRegistry) -> None:
        self._clock = clock
        self._commands = commands
        self._disk = SandboxDisk()

    def step_runner(self) -> BashkitRunner:
        return BashkitRunner(self._disk, self._clock, self._commands)

    def make_dir(self, path: str) -> None:
        self._disk.write_file(path + "/.keep", b"")
        self._disk.remove(path + "/.keep")

    async def finish(self) -> BashkitImage:
        return BashkitImage(self._disk)

    def discard(self) -> None:
        self._disk.wipe()


#: Trees a sandbox's kernel provides: never copied from a template's files.
_KERNELS = frozenset({"/dev", "/proc", "/sys"})


def seed(image: BashkitImage, disk: SandboxDisk) -> None:
    """Copy the built files into a new sandbox's disk.

    Files the build left as the image has them (its ``/usr/bin`` command wrappers,
    ``/etc/os-release``…) are not copied: they are the sandbox's already."""
    source = image.disk
    base = SandboxDisk()
    try:
        stack = ["/"]
        while stack:
            directory = stack.pop()
            entry: Any
            for name, entry in vfs.list_dir(source.fs, directory):
                path = posixpath.join(directory, name)
                if path in _KERNELS:
                    continue  # the sandbox's own (bashkit's are stand-ins)
                if entry.kind == "directory":
                    vfs.mkdirs(disk.fs, path)
                    stack.append(path)
                elif entry.kind == "file":
                    data = source.read_file(path)
                    if not (base.exists(path) and base.read_file(path) == data):
                        disk.write_file(path, data, mode=entry.mode)
    finally:
        base.wipe()
