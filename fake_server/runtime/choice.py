"""Which runtime a new sandbox gets: the fake's default, or the one chosen for its rootfs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.runtime.api import RUNTIMES
from fake_server.runtime.bashkit.commands import CommandRegistry
from fake_server.runtime.bashkit.machine import BashkitRuntime
from fake_server.runtime.bashkit.missing import DEFAULT_CHOICE
from fake_server.runtime.bashkit.ports import PortRegistry
from fake_server.runtime.netoptions import HostnameMode, NetworkOptions

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from fake_server.clock import Clock
    from fake_server.runtime.api import (
        Builder,
        Commands,
        FileKeeper,
        Image,
        Machine,
        Runtime,
        SharedBucket,
    )

__all__ = ["Runtimes", "check_name"]


def check_name(name: object) -> str:
    if name not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {name!r}")
    return str(name)


class Runtimes:
    """The runtimes of one fake, made on first use (the process runtime checks bwrap then).

    ``default`` names the runtime of new sandboxes; ``by_rootfs`` overrides it per rootfs.
    Choosing ``process`` where bubblewrap cannot run raises ``RuntimeUnavailable`` at once
    (so does one whose image cannot be built, unless ``image_fallback`` allows the layout).
    """

    def __init__(
        self,
        commands: Commands,
        default: str = "bashkit",
        by_rootfs: Mapping[str, str] | None = None,
        network: NetworkOptions | None = None,
        *,
        image_fallback: bool = False,
        ports: PortRegistry | None = None,
    ) -> None:
        if not isinstance(commands, CommandRegistry):
            raise TypeError("commands must be a CommandRegistry (fake.commands)")
        self._commands = commands
        #: Servers a test registers in bashkit sandboxes (``FakeCreateOS.ports``).
        self.ports = ports if ports is not None else PortRegistry()
        #: How a user of this fake chooses the process runtime; bashkit's ``command not found``
        #: for a program the host has says so (the plugin sets its marker here).
        self.process_choice = DEFAULT_CHOICE
        self.network = network or NetworkOptions()
        #: Whether host-name egress rules are enforced, for every runtime of this fake.
        self.hostnames = HostnameMode()
        self._image_fallback = image_fallback
        self._made: dict[str, Runtime] = {}
        self._default = "bashkit"
        self.by_rootfs: dict[str, str] = {}
        #: Where the process runtime keeps sandbox directories that outlive the fake
        #: (``serve --state-dir``); ``None``: a temporary directory removed at close.
        self.kept_root: Path | None = None
        #: Where it keeps disk buckets' directories then.
        self.kept_buckets: Path | None = None
        self.default = default
        for rootfs, name in (by_rootfs or {}).items():
            self.set_rootfs(rootfs, name)

    @property
    def default(self) -> str:
        return self._default

    @default.setter
    def default(self, name: str) -> None:
        self.get(check_name(name))
        self._default = name

    def set_rootfs(self, rootfs: str, name: str | None) -> None:
        """Sandboxes of ``rootfs`` get runtime ``name`` (``None``: the default again)."""
        if name is None:
            self.by_rootfs.pop(rootfs, None)
            return
        self.get(check_name(name))
        self.by_rootfs[rootfs] = name

    def get(self, name: str) -> Runtime:
        runtime = self._made.get(name)
        if runtime is None:
            runtime = self._made[name] = _MAKERS[name](self)
        return runtime

    def keep_in(self, path: Path, buckets: Path | None = None) -> None:
        """Sandboxes kept on disk live in ``path`` from now on, disk buckets' directories
        in ``buckets``, and both outlive the fake."""
        self.kept_root, self.kept_buckets = path, buckets
        for runtime in list(self._made.values()):
            runtime.keep_in(path, buckets)

    def of(self, rootfs: str) -> Runtime:
        """The runtime sandboxes (and template builds) of ``rootfs`` get."""
        return self.get(self.by_rootfs.get(rootfs, self._default))

    def new_sandbox(
        self, sandbox_id: str, rootfs: str, disk_mib: int, *, image: Image | None = None
    ) -> Machine:
        """A new sandbox of ``rootfs``; from a template's ``image``, on the runtime that
        built it."""
        if image is not None:
            return self.get(image.runtime).new_sandbox(sandbox_id, disk_mib, image=image)
        return self.of(rootfs).new_sandbox(sandbox_id, disk_mib, rootfs=rootfs)

    def builder(self, base: str, clock: Clock) -> Builder:
        """A template build on ``base``, on the runtime its sandboxes get."""
        return self.of(base).builder(base, clock, self._commands)

    def keeper(self) -> FileKeeper:
        """How the in-memory runtime's files are saved (``serve --state-dir``)."""
        keeper = self.get("bashkit").keeper()
        assert keeper is not None
        return keeper

    def new_bucket(self) -> SharedBucket:
        """A disk bucket held in memory, for machines with ``SharedMounts``."""
        return BashkitRuntime.new_bucket()

    def kill_processes(self) -> None:
        """Kill every real process now, keeping every file (bashkit's stop with their tasks)."""
        for runtime in list(self._made.values()):
            runtime.kill_processes()

    def clear_buckets(self) -> None:
        """Empty every disk bucket a runtime keeps itself (a reset; bashkit's are models)."""
        for runtime in list(self._made.values()):
            runtime.clear_buckets()

    def close(self) -> None:
        """Kill what every runtime runs and remove its files (runtimes are made again on use)."""
        made, self._made = self._made, {}
        for runtime in made.values():
            runtime.close()


def _bashkit(runtimes: Runtimes) -> Runtime:
    return BashkitRuntime(
        runtimes._commands, runtimes.hostnames, lambda: runtimes.process_choice, runtimes.ports
    )


def _process(runtimes: Runtimes) -> Runtime:
    """Imported on first use: the process runtime checks bubblewrap then."""
    from fake_server.runtime.process import ProcessRuntime

    return ProcessRuntime(
        network=runtimes.network,
        hostnames=runtimes.hostnames,
        kept=runtimes.kept_root,
        kept_buckets=runtimes.kept_buckets,
        image_fallback=runtimes._image_fallback,
    )


#: How each runtime of ``api.RUNTIMES`` is made from a fake's options: a new runtime is a
#: folder of ``fake_server/runtime/`` and a line here.
_MAKERS: dict[str, Callable[[Runtimes], Runtime]] = {"bashkit": _bashkit, "process": _process}
