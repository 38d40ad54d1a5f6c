"""One process-runtime sandbox: its root, its runs, its network namespace and its disks.

The machine asks its runtime (``Owner``) for what sandboxes share: the fake's network and
account-network bridges (for its ``wiring``), the disk buckets' directories, and new
sandboxes for a fork.
"""

from __future__ import annotations

import signal as signals
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fake_server.runtime.api import FeatureUnavailable, Usage
from fake_server.runtime.environment import HOME
from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.containment.cgroups import Limits, SandboxGroup
from fake_server.runtime.process.containment.mountns import MS_BIND, MS_REC, MountSpace, mount
from fake_server.runtime.process.desktop.xdesktop import XDesktop
from fake_server.runtime.process.sandbox.agent import Agent
from fake_server.runtime.process.sandbox.cmdline import LAYOUT_MOUNT, USER_HOME
from fake_server.runtime.process.sandbox.guest import Guest
from fake_server.runtime.process.sandbox.realwait import RealWaits
from fake_server.runtime.process.sandbox.runner import Runner
from fake_server.runtime.process.sandbox.selfpipe import SelfPipe
from fake_server.runtime.process.sandbox.wiring import Networks, Wiring
from fake_server.runtime.process.storage import buckets
from fake_server.runtime.process.storage.dirdisk import DirDisk
from fake_server.runtime.process.storage.rootdir import remove_tree
from fake_server.runtime.process.storage.userroot import UserRoot

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Sequence

    from fake_server.clock import Clock
    from fake_server.runtime.api import Image, Meter
    from fake_server.runtime.process.containment.confine import Confinement
    from fake_server.runtime.process.containment.idmap import IdRange, OwnId, Subordinate
    from fake_server.runtime.process.images.system import System
    from fake_server.runtime.process.net.netmode import NetworkMode
    from fake_server.runtime.process.net.netns import NetNamespace
    from fake_server.runtime.process.sandbox.run import Run
    from fake_server.runtime.process.storage.userroot import Root

__all__ = [
    "DISKS_NEED_ROOT",
    "DISKS_NEED_ROOT_UNPRIVILEGED",
    "NO_DESKTOP",
    "Owner",
    "ProcessMachine",
]

#: Why a sandbox without its own root file system (not root) cannot mount a disk.
DISKS_NEED_ROOT = (
    "disks need the process runtime's devbox:1 image (the fake running as root, where a "
    "sandbox has a mount namespace of its own); this sandbox runs on the host-directory layout"
)

#: Why a sandbox booting the image unprivileged (``userroot``) cannot mount a disk.
DISKS_NEED_ROOT_UNPRIVILEGED = (
    "disks need the fake running as root: unprivileged, a sandbox's mounts are made by a "
    "namespace of its own, which a disk's directory cannot be bound into safely"
)

#: Why a process-runtime sandbox has no desktop for computer use.
NO_DESKTOP = (
    "computer use on the process runtime needs desktop:1's X desktop in the Debian 13 image "
    "(createos-fake image builds it, as root)"
)


class Owner(Networks, Protocol):
    """What a machine uses of its runtime (``ProcessRuntime``)."""

    bwrap: str
    network_mode: NetworkMode
    #: The host ids of its sandboxes' users (the image), ``None`` on the host-directory layout.
    ids: IdRange | None
    #: What its sandboxes boot (``system``): whether the X desktop is there.
    system: System
    #: The map of the layout's ids (``idmap.layout_map``); ``None`` where sandboxes boot the image.
    layout_map: IdRange | Subordinate | OwnId | None

    @property
    def layout_bwrap(self) -> str: ...

    def files_owner(self, *, image: bool) -> tuple[int, int] | None: ...

    @property
    def confinement(self) -> Confinement | None: ...

    buckets: buckets.BucketDirs
    machines: dict[str, ProcessMachine]

    def new_sandbox(
        self,
        sandbox_id: str | None,
        disk_mib: int = ...,
        *,
        source: ProcessMachine | None = None,
        image: Image | None = None,
        rootfs: str = ...,
    ) -> ProcessMachine: ...

    async def fork_of(self, source: ProcessMachine) -> ProcessMachine: ...


class ProcessMachine:
    """One sandbox: its directory, its live runs."""

    runtime = "process"

    def __init__(
        self,
        owner: Owner,
        directory: Path,
        rootfs: Root | None = None,
        *,
        lazy_net: bool = False,
        make_rootfs: Callable[[int], Root] | None = None,
        disk_mib: int = 0,
        tree: str = "devbox",
    ) -> None:
        """``lazy_net``, ``make_rootfs``: make the network namespace and the root file system
        (``make_rootfs(disk_mib)``) on first use, not now: a disk image costs milliseconds to
        make and mount, a restart brings back many paused sandboxes at once, and a sandbox
        nobody runs anything in needs neither. ``tree``: the image tree its root is over
        (``System.tree``: ``desktop`` for desktop:1's, with the X desktop)."""
        self._owner = owner
        self.tree = tree
        #: The sandbox's directory on the host (mount points, and its disk image if kept).
        self.directory = directory
        self._rootfs = rootfs
        #: As root on the layout, the mount namespace its init enters (``layout_mount``).
        self._layout_space: MountSpace[None] | None = None
        self._make_rootfs = make_rootfs
        #: The disk size the root file system is made with, while it is not made yet.
        self._disk_mib = disk_mib
        self.home = HOME if rootfs is not None or make_rootfs is not None else USER_HOME
        image = rootfs is not None or make_rootfs is not None
        self._disk = DirDisk(lambda: self.root, owner=owner.files_owner(image=image))
        self.runs: dict[Any, Run] = {}
        #: Its init, whose namespaces every process enters (started by the first one).
        self.guest = Guest()
        #: Its shape's limits, and the cgroups holding them (made with its first process).
        self._limits = Limits()
        self._cgroup: SandboxGroup | None = None
        self.paused = False
        #: Set when the fake stops (``kill_processes``): a process still starting is killed
        #: as soon as it runs, not left out of the stop.
        self.stopping = False
        self.network_mode = owner.network_mode
        #: Its network namespace, ``eth0`` and account-network interfaces.
        self.wiring = Wiring(owner, owner.network_mode, directory.name)
        #: What the in-guest agent's signals do (``set_agent``), and its listener.
        self._agent_handler: Callable[[str, str], None] | None = None
        self._agent: Agent | None = None
        #: Disk buckets bound into its root: mount path -> bucket.
        self.buckets: dict[str, str] = {}
        self._desktop: XDesktop | None = None
        if rootfs is not None and rootfs.usernet is not None:
            self.wiring.adopt(rootfs.usernet)
        if not lazy_net:
            self.wiring.make()

    @property
    def disk(self) -> DirDisk:
        return self._disk

    @property
    def rootfs(self) -> Root | None:
        """Its own root file system (the image), ``None`` for the host-directory layout."""
        make, self._make_rootfs = self._make_rootfs, None
        if make is not None:
            self._rootfs = made = make(self._disk_mib)
            if made.usernet is not None:  # its network is the one its root is mounted in
                self.wiring.adopt(made.usernet)
        return self._rootfs

    @property
    def root(self) -> Path:
        """Its ``/`` as the fake reaches it."""
        rootfs = self.rootfs
        return Path(rootfs.view) if rootfs is not None else self.directory

    @property
    def net(self) -> NetNamespace | None:
        """The sandbox's shared network namespace; ``None`` when each process has its own."""
        return self.wiring.net

    @property
    def cgroup(self) -> SandboxGroup:
        """The sandbox's cgroups (``cgroups``), made on first use with its limits."""
        if self._cgroup is None:
            self._cgroup = SandboxGroup(self._limits)
        return self._cgroup

    def set_shape(self, vcpus: int, memory_mib: int, cpu_percent: int | None = None) -> None:
        """The shape's vCPUs, memory and CPU quota become the sandbox's limits (``cgroups``)."""
        self._limits = Limits(vcpus=vcpus, memory_mib=memory_mib, cpu_percent=cpu_percent)
        if self._cgroup is not None:
            self._cgroup.apply(self._limits)

    def runner(self, clock: Clock) -> Runner:
        rootfs = self.rootfs
        layout = self._owner.layout_map if rootfs is None else None
        usernet = rootfs.usernet if rootfs is not None else self.wiring.usernet(layout)
        return Runner(
            self._owner.layout_bwrap if layout is not None else self._owner.bwrap,
            self.root,
            self._disk,
            self.runs,
            self.net,
            self._env,
            lambda: self.paused,
            guest=self.guest,
            rootfs=rootfs,
            cgroup=self.cgroup,
            stopping=lambda: self.stopping,
            confinement=self._owner.confinement if rootfs is not None else None,
            clock=clock,
            layout_map=layout,
            layout_mount=self.layout_mount() if layout is not None else None,
            usernet=usernet,
        )

    def desktop(self, clock: Clock, width: int, height: int) -> XDesktop:
        """Its X desktop (``desktop``: started on first use, at ``width`` × ``height``);
        ``FeatureUnavailable`` where its tree has none (only desktop:1's has)."""
        if self._desktop is None:
            if self.tree != "desktop" or not self._owner.system.desktop or self.rootfs is None:
                raise FeatureUnavailable(NO_DESKTOP)
            self._desktop = XDesktop(lambda: self.runner(clock), width, height)
        return self._desktop

    def layout_mount(self) -> str | None:
        """As root on the layout (``idmap.IdRange``), a mount namespace of the sandbox's own
        with its directory bound at ``LAYOUT_MOUNT``, made on first use, where the init's
        bwrap (the range's first id) reaches it whatever the directories above it let pass;
        ``None`` elsewhere."""
        if not isinstance(self._owner.layout_map, idmap.IdRange):
            return None
        if self._layout_space is None:
            source = str(self.directory)
            self._layout_space = MountSpace(
                lambda: mount(source, LAYOUT_MOUNT, None, MS_BIND | MS_REC)
            )
        return self._layout_space.path

    def set_disk_size(self, disk_mib: int) -> None:
        """Writes past ``disk_mib`` fail with ENOSPC (the image's upper layer is that big)."""
        if self._make_rootfs is not None:  # not made yet: made with this size
            self._disk_mib = disk_mib
        elif self._rootfs is not None and disk_mib != self._rootfs.size_mib:
            self._rootfs.resize(disk_mib)

    def set_address(self, address: str) -> None:
        """Plug ``eth0`` with the address the API reports (once; idempotent)."""
        self.wiring.set_address(address)

    def set_egress(self, rules: Sequence[str], meter: Callable[[], Meter]) -> None:
        self.wiring.set_egress(rules)

    def join_network(self, network_id: str, address: str) -> None:
        """Plug into the network's bridge with ``address`` (``ip/prefix``) on ``ethN``."""
        self.wiring.join(network_id, address)

    def leave_network(self, network_id: str) -> None:
        self.wiring.leave(network_id)

    def mount_bucket(self, bucket: str, mount_path: str, sub_path: str) -> None:
        """Bind the bucket's host directory (or its ``sub_path`` folder) at ``mount_path``:
        no copy, so every sandbox that mounts it sees the others' writes at once."""
        rootfs = self.rootfs
        if rootfs is None:
            raise FeatureUnavailable(DISKS_NEED_ROOT)
        if isinstance(rootfs, UserRoot):
            raise FeatureUnavailable(DISKS_NEED_ROOT_UNPRIVILEGED)
        store = self._owner.buckets.get(bucket)
        buckets.bind(rootfs, self._disk, store, mount_path, sub_path, self._owner.buckets.owner)
        self.buckets[mount_path] = bucket

    def unmount_bucket(self, mount_path: str) -> None:
        """Undo ``mount_bucket`` (and what was mounted below it); nothing once destroyed."""
        if self.buckets.pop(mount_path, None) is None or self._disk.wiped:
            return
        for nested in [p for p in self.buckets if p.startswith(mount_path.rstrip("/") + "/")]:
            del self.buckets[nested]
        rootfs = self.rootfs
        if rootfs is not None and not isinstance(rootfs, UserRoot):  # (none bound there)
            buckets.unbind(rootfs, self._disk, mount_path)

    def set_agent(self, handler: Callable[[str, str], None]) -> None:
        """``handler(action, reason)`` for the agent's ``/self/pause`` and ``/self/delete``."""
        self._agent_handler = handler

    async def _env(self) -> dict[str, str]:
        """What a new process's environment gains: nothing (the network needs no proxy).

        Before the sandbox's first process runs, the agent starts listening inside."""
        net = self.net
        if self._agent is None and net is not None and self._agent_handler is not None:
            pipe = SelfPipe(self._disk, self._agent_handler)  # /run/self (the CLI's self.go)
            self._agent = Agent(net, self._agent_handler, pipe)
        if self._agent is not None:
            await self._agent.start()
        return {}

    def usage(self) -> Usage:
        """CPU and memory of every process of the sandbox, daemons included: from its
        cgroups, or (without them) of every live process tree, from ``/proc``."""
        from fake_server.runtime.process.sandbox.usage import tree_usage

        used = self._cgroup.usage() if self._cgroup is not None else None
        if used is None:
            return tree_usage(run.pid for run in list(self.runs.values()))
        cpu, memory = used
        processes = len(self._cgroup.members()) if self._cgroup is not None else 0
        return Usage(cpu_seconds=cpu, memory_bytes=memory, processes=processes)

    async def connect(self, port: int, *, loopback: bool = False) -> socket.socket:
        """A TCP connection to ``port`` on the sandbox's ``eth0`` address, from the router;
        with ``loopback``, to ``127.0.0.1`` from inside its network namespace (a tunnel,
        which reaches a server bound to loopback, as the service's CLI says).

        Raises ``ConnectionRefusedError`` when nothing listens there (on ``eth0``, a server
        bound to ``127.0.0.1`` included, as on the service), ``FeatureUnavailable`` when each
        process has a loopback-only network of its own (no server is reachable from outside)."""
        return await self.wiring.connect(port, loopback=loopback)

    def wait_clock(self, clock: Clock) -> Clock:
        return RealWaits(clock)

    def pause(self) -> None:
        """Stop every process, daemons included; they resume where they were."""
        self.paused = True
        for run in list(self.runs.values()):  # each exec's nsenter first (``tree.stop_first``)
            run.stop(signals.SIGSTOP)
        self.guest.send(signals.SIGSTOP, self._run_pids())

    def resume(self) -> None:
        self.paused = False
        self.guest.send(signals.SIGCONT, self._run_pids())  # children first
        for run in list(self.runs.values()):  # each exec's nsenter last
            run.stop(signals.SIGCONT)

    def _run_pids(self) -> list[int]:
        return [run.pid for run in self.runs.values()]

    def fork(self) -> ProcessMachine:
        """A new sandbox with a copy of this one's files (copy-on-write where possible)."""
        return self._owner.new_sandbox(None, source=self)

    async def fork_async(self) -> ProcessMachine:
        """``fork()``, the files copied by a worker thread (``ProcessRuntime.fork_of``)."""
        return await self._owner.fork_of(self)

    @property
    def disk_size(self) -> int:
        """Its disk's size in MiB (the one it will be made with, if not made yet)."""
        return self._rootfs.size_mib if self._rootfs is not None else self._disk_mib

    @property
    def made(self) -> bool:
        """Whether its root file system exists yet (``False``: still a plan, nothing to copy)."""
        return self._make_rootfs is None

    def destroy(self) -> None:
        """Kill every process (SIGTERM, SIGKILL after a grace) and remove the directory;
        idempotent."""
        self._disk.wipe()
        rootfs = self._rootfs
        self.shut_down()
        if rootfs is not None:  # (unprivileged, files of the sandbox's other ids too)
            rootfs.remove()
        else:
            remove_tree(self.directory)

    def can_open_pty(self) -> bool:
        from fake_server.runtime.process.sandbox.pty import SETSID

        return SETSID is not None

    def saved(self) -> dict[str, Any]:
        """Its directory's name and tree: a restart adopts it (``ProcessRuntime.adopt``)."""
        tree = {"tree": self.tree} if self.tree != "devbox" else {}
        return {"directory": self.directory.name, **tree}

    def stop_processes(self) -> None:
        """Kill every process (SIGTERM, SIGKILL after a grace), keeping files and network."""
        for run in self.runs.values():
            run.sent.update((signals.SIGTERM, signals.SIGKILL))
        self.guest.close(self._run_pids())
        cgroup, self._cgroup = self._cgroup, None
        if cgroup is not None:
            cgroup.close()  # kills a straggler that forked past the guest's sweep

    def shut_down(self) -> None:
        """Kill every process (SIGTERM, SIGKILL after a grace) and unplug the network, keeping
        the directory (a host going down: ``serve --state-dir`` restores the files);
        idempotent."""
        self.stop_processes()
        self.wiring.unplug()
        agent, self._agent = self._agent, None
        if agent is not None:
            agent.close()
        self.wiring.close()
        self._make_rootfs = None
        if self._rootfs is not None:
            self._rootfs.close()  # its mounts go with its last process (a kept disk is saved)
        space, self._layout_space = self._layout_space, None
        if space is not None:
            space.close()
        self._owner.machines.pop(self.directory.name, None)
