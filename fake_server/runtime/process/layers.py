"""Template builds on the process runtime: ``RUN`` steps in a build sandbox, kept as a layer.

A build is a sandbox of its own (``ProcessRuntime.new_sandbox``), so its steps run exactly as
a sandbox's commands do: on the base image's copy-on-write root, as root of a user namespace
whose ids are unprivileged on the host, under the seccomp filter and the cgroup limits, with
``/proc`` masked, and with the sandboxes' route out (``eth0`` on the fake's router, its own
address) so ``apt-get install`` reaches the archive. Once every step has run, its processes
are killed and what the build changed (the overlay's upper directory: files, whiteouts and
opaque markers, owners in the sandboxes' id range) is **copied** into the template's layer, a
directory of the runtime's (``.layers/<name>`` beside the sandboxes, so ``serve --state-dir``
keeps it); the build sandbox goes. A sandbox created from the template starts with a copy of
the layer as its own upper directory, as a fork starts from its source's, over the same
image. On the host-directory layout (not root) the layer is a copy of the build's directory.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from typing import TYPE_CHECKING, Any

from fake_server.runtime.process.storage.rootdir import copy_tree, remove_tree

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from fake_server.clock import Clock
    from fake_server.runtime.api import Runner
    from fake_server.runtime.process.sandbox.machine import ProcessMachine

__all__ = ["LayerImage", "ProcessBuilder", "build_address"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: The shape a build runs with (cgroup limits): the service's default shape's.
BUILD_VCPUS, BUILD_MEMORY_MIB = 1, 1024


class LayerImage:
    """A template built on the process runtime: its layer directory on the host."""

    runtime = "process"

    def __init__(
        self, layer: Path, tree: str = "devbox", remove: Callable[[Path], None] = remove_tree
    ) -> None:
        self.layer = layer
        #: How the layer goes (``ProcessRuntime.remove_tree``: its files have the sandbox's ids).
        self._remove = remove
        #: The image tree the build ran on, which the template's sandboxes boot under it.
        self.tree = tree
        self.size = _size(layer)

    def saved(self) -> dict[str, Any]:
        tree = {"tree": self.tree} if self.tree != "devbox" else {}
        return {"runtime": "process", "layer": self.layer.name, **tree}

    def open_upper(self) -> int:
        """A descriptor of the layer (what a new sandbox's upper directory starts as)."""
        return os.open(self.layer, _DIR)

    def discard(self) -> None:
        self._remove(self.layer)


class ProcessBuilder:
    """One build: a sandbox of the runtime's, made with the builder and gone at the end."""

    #: The steps take real time: the build runs after the create has answered.
    background = True

    def __init__(
        self,
        machine: ProcessMachine,
        layers: Path,
        address: str,
        clock: Clock,
        remove: Callable[[Path], None] = remove_tree,
    ) -> None:
        self._machine = machine
        self._remove = remove
        self._layers = layers
        self._clock = clock
        machine.set_shape(BUILD_VCPUS, BUILD_MEMORY_MIB)
        machine.set_address(address)

    def step_runner(self) -> Runner:
        return self._machine.runner(self._clock)

    def make_dir(self, path: str) -> None:
        self._machine.disk.make_dirs(path)

    async def finish(self) -> LayerImage:
        """Kill what the steps left running, copy their changes into a layer (a worker
        thread's copy: steps that wrote many files never hold the fake's loop), drop the
        build's sandbox. Cancelled meanwhile, both go once the copy ended."""
        machine = self._machine
        machine.stop_processes()
        self._layers.mkdir(mode=0o711, exist_ok=True)
        layer = self._layers / f"layer-{secrets.token_hex(6)}"
        rootfs = machine.rootfs
        if rootfs is None:  # the host-directory layout: the whole directory
            copy = asyncio.to_thread(copy_tree, machine.directory, layer)
        else:
            copy = asyncio.to_thread(rootfs.copy_upper, layer)
        copied = asyncio.ensure_future(copy)

        def drop(_: object = None) -> None:
            if copied.done() and not copied.cancelled():
                copied.exception()  # retrieved: it is the build's failure, or none
            self._remove(layer)
            machine.destroy()

        try:
            await asyncio.shield(copied)
        except asyncio.CancelledError:
            copied.add_done_callback(drop)
            raise
        except BaseException:
            drop()
            raise
        machine.destroy()
        return LayerImage(layer, machine.tree, self._remove)

    def discard(self) -> None:
        self._machine.destroy()


def build_address(used: Mapping[str, object]) -> str:
    """An address for a build's ``eth0`` none of ``used`` has (builds draw from 10.254/16;
    sandboxes' addresses are drawn from all of 10/8)."""
    while True:
        number = secrets.randbelow(254 * 254)
        address = f"10.254.{number // 254 + 1}.{number % 254 + 1}"
        if address not in used:
            return address


def _size(top: Path) -> int:
    """Bytes the layer's files take (what the template's ``size`` reports)."""
    total = 0
    for path, _dirs, files in os.walk(top):
        for name in files:
            try:
                total += os.lstat(os.path.join(path, name)).st_size
            except OSError:
                continue
    return total
