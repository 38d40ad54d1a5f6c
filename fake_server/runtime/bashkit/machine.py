"""The bashkit runtime behind the ``Runtime`` interface: in-memory disk, bashkit, fake time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.runtime import egress
from fake_server.runtime.api import FeatureUnavailable, RuntimeUnavailable
from fake_server.runtime.bashkit.disk import SandboxDisk
from fake_server.runtime.bashkit.images import BashkitBuilder, BashkitImage, seed
from fake_server.runtime.bashkit.missing import DEFAULT_CHOICE
from fake_server.runtime.bashkit.mounts import Bucket, MountingDisk
from fake_server.runtime.bashkit.ports import PortRegistry
from fake_server.runtime.bashkit.shell import BashkitRunner
from fake_server.runtime.environment import HOME
from fake_server.runtime.netoptions import HostnameMode

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

    from fake_server.clock import Clock
    from fake_server.runtime.api import Commands, Image, Meter, SharedBucket
    from fake_server.runtime.bashkit.commands import CommandRegistry
    from fake_server.runtime.bashkit.keeper import BashkitKeeper

__all__ = ["BashkitMachine", "BashkitRunner", "BashkitRuntime"]


class BashkitMachine:
    """A sandbox of the bashkit runtime: its ``SandboxDisk``; processes keep running on pause."""

    runtime = "bashkit"
    home = HOME

    def __init__(
        self,
        commands: CommandRegistry,
        disk: SandboxDisk | None = None,
        hostnames: HostnameMode | None = None,
        process_choice: Callable[[], str] = lambda: DEFAULT_CHOICE,
        ports: PortRegistry | None = None,
    ) -> None:
        self._commands = commands
        self._process_choice = process_choice
        self._ports = ports if ports is not None else PortRegistry()
        self._disk = disk if disk is not None else SandboxDisk()
        self._egress: tuple[str, ...] = ()
        #: Whether host-name rules are enforced (the fake's setting; the service's: not).
        self.hostnames = hostnames if hostnames is not None else HostnameMode()

    @property
    def disk(self) -> SandboxDisk:
        return self._disk

    def runner(self, clock: Clock) -> BashkitRunner:
        return BashkitRunner(
            self._disk,
            clock,
            self._commands,
            egress=self._egress_rules,
            process_choice=self._process_choice,
        )

    def _egress_rules(self) -> list[str]:
        """The rules ``curl`` and ``wget`` meet: host-name rules count only when enforced."""
        return egress.effective(self._egress, names=self.hostnames.enforce)

    def wait_clock(self, clock: Clock) -> Clock:
        return clock

    def set_shape(self, vcpus: int, memory_mib: int, cpu_percent: int | None = None) -> None:
        """Nothing: bashkit's commands run inside the fake (its own limits apply)."""

    def set_disk_size(self, disk_mib: int) -> None:
        """bashkit's in-memory disk keeps its fixed ``DISK_LIMIT`` whatever the sandbox's disk
        size (a documented difference: ``docs/reference/runtime-parity.md``)."""

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def fork(self) -> BashkitMachine:
        """A new sandbox holding exactly the files this one holds now."""
        from fake_server.runtime.bashkit.diskcopy import copy_disk

        return BashkitMachine(
            self._commands,
            copy_disk(self._disk, MountingDisk),
            self.hostnames,
            self._process_choice,
        )

    async def fork_async(self) -> BashkitMachine:
        """``fork()``: an in-memory copy, no slower than any other request."""
        return self.fork()

    def destroy(self) -> None:
        self._disk.wipe()

    def set_address(self, address: str) -> None:
        """Nothing to wire: the in-memory shell has no network interface."""

    def set_agent(self, handler: Callable[[str, str], None]) -> None:
        """Nothing listens: bashkit's ``curl`` reaches no agent (a parity-table difference)."""

    def set_egress(self, rules: Sequence[str], meter: Callable[[], Meter]) -> None:
        """The rules ``curl`` and ``wget`` apply from their next connection on (even in a
        process already running); bashkit moves no data, so the meter is not used."""
        self._egress = tuple(rules)

    def join_network(self, network_id: str, address: str) -> None:
        """Bashkit sandboxes have no interfaces: membership lives in the model only."""

    def leave_network(self, network_id: str) -> None:
        pass

    def can_open_pty(self) -> bool:
        return True

    def saved(self) -> dict[str, Any]:
        """Nothing on disk: persistence snapshots its files (``keeper``)."""
        return {"directory": None}

    def mount_shared(self, bucket: SharedBucket, mount_path: str, sub_path: str) -> None:
        """Mount a bucket of ``new_bucket`` (its ``sub_path`` folder) at ``mount_path``."""
        _bucket(bucket).mount(self._mounting(), mount_path, sub_path)

    def unmount_shared(self, bucket: SharedBucket, mount_path: str) -> None:
        _bucket(bucket).unmount(self._mounting(), mount_path)

    def _mounting(self) -> MountingDisk:
        if not isinstance(self._disk, MountingDisk):
            raise FeatureUnavailable("this sandbox's disk takes no mounts")
        return self._disk

    def usage(self) -> None:
        """Bashkit commands run inside the fake's own process: nothing to measure (the model
        applies its documented estimate, ``models.account.metrics``)."""
        return None

    async def connect(self, port: int, *, loopback: bool = False) -> socket.socket:
        """Bashkit runs no servers of its own: only a test's registered ones listen (on
        ``eth0`` and loopback alike, ``fake.ports``)."""
        return await self._ports.connect(port)


def _bucket(bucket: SharedBucket) -> Bucket:
    if not isinstance(bucket, Bucket):
        raise TypeError("not a bucket of the bashkit runtime")
    return bucket


class BashkitRuntime:
    name = "bashkit"

    def __init__(
        self,
        commands: CommandRegistry,
        hostnames: HostnameMode | None = None,
        process_choice: Callable[[], str] = lambda: DEFAULT_CHOICE,
        ports: PortRegistry | None = None,
    ) -> None:
        self._commands = commands
        self.hostnames = hostnames if hostnames is not None else HostnameMode()
        self._process_choice = process_choice
        self.ports = ports if ports is not None else PortRegistry()
        self._keeper: BashkitKeeper | None = None

    def new_sandbox(
        self,
        sandbox_id: str,
        disk_mib: int = 0,
        *,
        image: Image | None = None,
        rootfs: str = "devbox:1",
    ) -> BashkitMachine:
        """``disk_mib`` is not enforced: the in-memory disk keeps its fixed ``DISK_LIMIT``.
        ``image``: a template this runtime built, whose files are copied in. Every ``rootfs``
        boots the one image (desktop:1's desktop is the models' synthetic one)."""
        disk = MountingDisk()
        if image is not None:
            if not isinstance(image, BashkitImage):
                raise RuntimeUnavailable(f"a {image.runtime} template cannot start here")
            seed(image, disk)
        return BashkitMachine(
            self._commands, disk, self.hostnames, self._process_choice, self.ports
        )

    def builder(self, base: str, clock: Clock, commands: Commands) -> BashkitBuilder:
        """Every base is bashkit's one image."""
        return BashkitBuilder(clock, self._commands)

    def adopt_disk(self, disk: SandboxDisk) -> BashkitMachine:
        """The machine of a sandbox whose files were saved and are back in ``disk``."""
        return BashkitMachine(self._commands, disk, self.hostnames, ports=self.ports)

    def adopt(self, saved: Mapping[str, Any]) -> BashkitMachine:
        """Never: bashkit machines come back through ``keeper().adopt``."""
        raise RuntimeUnavailable("bashkit sandboxes are restored from their saved files")

    def adopt_image(self, saved: Mapping[str, Any]) -> BashkitImage:
        raise RuntimeUnavailable("bashkit templates are restored from their saved files")

    def keeper(self) -> BashkitKeeper:
        if self._keeper is None:
            from fake_server.runtime.bashkit.keeper import BashkitKeeper

            self._keeper = BashkitKeeper(self)
        return self._keeper

    def keep_in(self, path: Path, buckets: Path | None) -> None:
        """Nothing: bashkit's files live in memory (persistence snapshots them)."""

    def kill_processes(self) -> None:
        """Nothing: bashkit's processes are tasks, which the models cancel."""

    def clear_buckets(self) -> None:
        """Nothing: bashkit's buckets are the models' (``new_bucket``)."""

    @staticmethod
    def new_bucket() -> Bucket:
        return Bucket()

    def close(self) -> None:
        pass
