"""The process runtime: each sandbox boots the devbox image, its programs run under bubblewrap.

A sandbox's root is its own copy-on-write file system (``rootfs``: an overlay of the
``devbox:1`` image, ``image``, in a mount namespace of the sandbox's own), or, where the image
cannot be used (``system``), its host directory with the host's ``/usr`` bound read-only over
it. Every process runs as root (uid 0 of the sandbox's user namespace; ``sandbox``, uid 1000, on
the fallback layout) in the user, PID, IPC and UTS namespaces of the sandbox's init
(``guest``: hostname ``sandbox``, no host process visible) and in the sandbox's network
namespace (``netns``), so a server one exec starts is reached by the next exec. Once the API
gives the sandbox its address, the namespace gets ``eth0`` on the fake's router (``network``:
default route, DNS, NAT, egress rules in nftables), where preview URLs connect
(``connect()``); account networks plug it into a per-network bridge (``bridges``). Where
that namespace cannot be made (not root), each sandbox gets a loopback-only network of its
own and those features answer ``FeatureUnavailable`` (``netmode``).

The init's PID namespace lives as long as the sandbox, as a VM does: a daemon one exec starts
outlives it (reparented to the init) and ``ps`` shows every process of the sandbox. The
processes of one exec or managed process are one tree (``tree``): a kill signals the whole
tree; pause SIGSTOPs every process of the sandbox, resume SIGCONTs them.

PTY processes run on a real PTY (``pty.py``). Not supported (yet): registered Python commands
(``fake.commands``). Real programs run on real time: see
``docs/howto/process-runtime.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal as signals
from typing import TYPE_CHECKING, Any

from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.netoptions import HostnameMode, NetworkOptions
from fake_server.runtime.process.containment import idmap, procview, subids
from fake_server.runtime.process.containment.bwrap import reachable_copy, require_bwrap
from fake_server.runtime.process.containment.confine import Confinement
from fake_server.runtime.process.containment.procview import ProcView
from fake_server.runtime.process.images.image import DEVBOX
from fake_server.runtime.process.images.system import System, choose
from fake_server.runtime.process.layers import LayerImage, ProcessBuilder, build_address
from fake_server.runtime.process.net import netmode
from fake_server.runtime.process.net.bridges import Hub
from fake_server.runtime.process.net.netns import nsenter_path
from fake_server.runtime.process.net.network import Network
from fake_server.runtime.process.sandbox.machine import DISKS_NEED_ROOT, ProcessMachine
from fake_server.runtime.process.storage import buckets
from fake_server.runtime.process.storage.diskimage import Blanks
from fake_server.runtime.process.storage.rootdir import (
    BASE_NAME,
    FakeRoot,
    KeptRoot,
    copy_tree,
    make_layout,
    public_temp,
    remove_tree,
    traversable,
)
from fake_server.runtime.process.storage.rootfs import DISK_MIB, ImageSpace, SandboxRoot, Upper
from fake_server.runtime.process.storage.userroot import Removals, UserRoot, user_image

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from fake_server.clock import Clock
    from fake_server.runtime.api import Commands, Image
    from fake_server.runtime.process.images.image import Image as TreeImage
    from fake_server.runtime.process.storage.userroot import Root

__all__ = ["DISKS_NEED_ROOT", "ProcessMachine", "ProcessRuntime"]


class ProcessRuntime:
    """The process runtime of one fake: its ``FakeRoot`` and every machine in it.

    Construction checks that bubblewrap runs here (``RuntimeUnavailable`` otherwise) and
    decides the ``network_mode`` of every sandbox (``netmode.detect()`` unless given); the
    first sandbox removes what fakes that died left behind.
    """

    name = "process"

    def __init__(
        self,
        base: Path | None = None,
        *,
        network_mode: netmode.NetworkMode | None = None,
        network: NetworkOptions | None = None,
        hostnames: HostnameMode | None = None,
        kept: Path | None = None,
        kept_buckets: Path | None = None,
        system: System | None = None,
        image_fallback: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        """``kept``: a directory of sandboxes that outlives the fake (``KeptRoot``);
        ``kept_buckets``: one of disk buckets that does (else they are in the fake's)."""
        self.bwrap = require_bwrap()
        self.hostnames = hostnames if hostnames is not None else HostnameMode()
        nsenter_path()  # every process enters its sandbox's init with it
        self.network_mode = netmode.detect() if network_mode is None else network_mode
        self.network_options = network or NetworkOptions()
        self._network: Network | None = None
        #: The image sandboxes boot, or the host-directory layout (``system``).
        self.system = (
            choose(fallback=image_fallback, progress=progress) if system is None else system
        )
        #: The host ids of sandboxes' users: a range of the fake's own where they boot the image
        #: as root (root inside is an unprivileged id outside), none on the host-directory
        #: layout or unprivileged (``System.ids``: root inside is the caller, ``userroot``).
        self.ids = idmap.host_range() if self.system.image and not self.system.rootless else None
        #: The map of the layout's ids (``idmap.layout_map``); ``None`` with the image.
        self.layout_map = idmap.layout_map(image=self.system.image)
        self.base = base
        self.kept = kept
        self.kept_buckets = kept_buckets
        self._root: FakeRoot | None = None
        #: The fake's temporary directory when its sandboxes are kept elsewhere (``scratch``).
        self._scratch: FakeRoot | None = None
        self._confinement: Confinement | None = None
        #: lxcfs for the sandboxes' ``/proc`` (``procview``), started with the image's space.
        self._procview: ProcView | None = None
        self._procview_tried = False
        self._layout_bwrap: str | None = None
        #: The image namespace of each tree sandboxes boot (``System.tree``), made on first use.
        self._images: dict[str, ImageSpace] = {}
        #: The blank disk images new sandboxes' disks are copies of, made on first use.
        self._blanks: Blanks | None = None
        #: Unprivileged, the image sandboxes boot (``userroot``), made on first use, and the
        #: removals of destroyed sandboxes' directories.
        self._user_image: TreeImage | None = None
        ids = self.system.ids
        self._removals = Removals(ids) if ids is not None else None
        self.machines: dict[str, ProcessMachine] = {}
        self.hubs: dict[str, Hub] = {}
        self._forks = 0
        #: Disk buckets' host directories, in the fake's directory (gone at close) unless kept.
        self.buckets = buckets.BucketDirs(
            self._bucket_base, lambda: self.files_owner(image=self.system.image)
        )

    def files_owner(self, *, image: bool) -> tuple[int, int] | None:
        """Who owns on the host what the fake writes for a sandbox (uploads, disk buckets):
        the sandbox's root on the image, user ``sandbox`` on the layout as root; ``None``:
        the fake's own id (unprivileged: user ``sandbox`` inside)."""
        if image:
            return None if self.ids is None else self.ids.owner
        layout = self.layout_map
        return layout.layout_owner if isinstance(layout, idmap.IdRange) else None

    @property
    def layout_bwrap(self) -> str:
        """The bwrap a layout sandbox's init runs: as root, a copy the range's ids can run
        (``reachable_copy``), since the init runs it as the range's first id."""
        if not isinstance(self.layout_map, idmap.IdRange):
            return self.bwrap
        if self._layout_bwrap is None:
            self._layout_bwrap = reachable_copy(self.bwrap, self.scratch.programs)
        return self._layout_bwrap

    @property
    def fake_root(self) -> FakeRoot:
        if self._root is None:
            remove = self.remove_tree
            self._root = (
                FakeRoot(self.base, remove) if self.kept is None else KeptRoot(self.kept, remove)
            )
        return self._root

    def remove_tree(self, path: Path) -> None:
        """Remove a directory of sandboxes' files: unprivileged, as root of a namespace with
        their ids (``subids``: the caller may not remove what its subordinate ids own)."""
        ids = self.system.ids
        if ids is None or not path.exists():
            remove_tree(path)
            return
        subids.remove(ids, str(path))

    @property
    def scratch(self) -> FakeRoot:
        """The fake's own directory in the system's temporary directory: its sandboxes'
        directory, or one of its own where they are elsewhere (kept by ``serve --state-dir``,
        or in a ``base`` of the caller's, which the sandboxes' ids may not be able to pass
        through). The copy of bwrap their inits run from lives there, so a leftover init names
        a directory the next fake sweeps."""
        if self.kept is None and self.base is None and traversable(self.fake_root.path):
            return self.fake_root
        if self._scratch is None:
            self._scratch = FakeRoot(public_temp() / BASE_NAME)
        return self._scratch

    @property
    def confinement(self) -> Confinement | None:
        """How sandboxes booting the image are confined (``confine``); ``None`` on the
        host-directory layout."""
        if self._confinement is None and self.system.rootless:  # bwrap runs as root of H
            own = self.system.ids is not None and self.system.ids.own
            self._confinement = Confinement(None, self.bwrap, self.bwrap, ignore_chown=own)
        if self._confinement is None and self.ids is not None:
            init_bwrap = reachable_copy(self.bwrap, self.scratch.programs)
            view = self._proc_view()
            binds = tuple(view.binds()) if view is not None else ()
            self._confinement = Confinement(self.ids, init_bwrap, self.bwrap, binds)
        return self._confinement

    def _proc_view(self) -> ProcView | None:
        """The fake's lxcfs, started once, before the image's mount namespace copies the
        host's mounts; ``None`` where it cannot run (``serve`` said why at start-up)."""
        if not self._procview_tried:
            self._procview_tried = True
            if procview.unavailable() is None:
                with contextlib.suppress(OSError):
                    self._procview = ProcView(self.scratch.path / ".lxcfs")
        return self._procview

    def _bucket_base(self) -> Path:
        kept = self.kept_buckets
        return self.fake_root.path / ".disks" if kept is None else kept

    def clear_buckets(self) -> None:
        """Every disk bucket starts empty (a reset): their directories go, kept ones too."""
        made = self.kept_buckets is not None or self._root is not None
        self.buckets.clear(self._bucket_base() if made else None)

    def new_sandbox(
        self,
        sandbox_id: str | None,
        disk_mib: int = DISK_MIB,
        *,
        source: ProcessMachine | None = None,
        image: Image | None = None,
        rootfs: str = DEVBOX,
    ) -> ProcessMachine:
        """A new sandbox of ``rootfs`` with a disk of ``disk_mib`` (a fork: its source's files,
        size and tree; ``image``: a template's layer over the tree it was built on,
        ``layers``)."""
        sandbox_id, directory = self._fresh(sandbox_id)
        machine = self._make(directory, disk_mib, source, image, rootfs)
        self.machines[sandbox_id] = machine
        return machine

    async def fork_of(self, source: ProcessMachine) -> ProcessMachine:
        """A fork of ``source`` (``new_sandbox``) whose files a worker thread copies: a
        sandbox of many files never holds the fake's loop (its callers keep ``source`` as it
        is meanwhile: ``http.handlers.sandbox_admin``)."""
        sandbox_id, directory = self._fresh(None)
        made = asyncio.ensure_future(
            asyncio.to_thread(self._make, directory, DISK_MIB, source, None, DEVBOX)
        )
        try:
            machine = await asyncio.shield(made)
        except asyncio.CancelledError:  # the request went: the copy, once ended, goes too
            made.add_done_callback(lambda _: self._abandoned(made, directory))
            raise
        except OSError:  # nothing is left of a failed copy
            await asyncio.to_thread(self.remove_tree, directory)
            raise
        self.machines[sandbox_id] = machine
        return machine

    def _abandoned(self, made: asyncio.Future[ProcessMachine], directory: Path) -> None:
        """A fork's copy ended after its request went: the fork is destroyed, or what a
        failed copy left is removed (on a worker thread, as ``fork_of`` removes it)."""
        if made.cancelled():
            return
        if made.exception() is None:
            made.result().destroy()
        else:  # nobody awaits the removal: one that fails leaves the directory, unreported
            removal = asyncio.get_running_loop().run_in_executor(None, self.remove_tree, directory)
            removal.add_done_callback(lambda done: done.cancelled() or done.exception())

    def _fresh(self, sandbox_id: str | None) -> tuple[str, Path]:
        """``sandbox_id``, or a fork's own (a kept root may hold the forks of an earlier
        start), and its directory."""
        while sandbox_id is None or self.fake_root.sandbox_dir(sandbox_id).exists():
            self._forks += 1
            sandbox_id = f"fork-{self._forks}"
        return sandbox_id, self.fake_root.sandbox_dir(sandbox_id)

    def _make(
        self,
        directory: Path,
        disk_mib: int,
        source: ProcessMachine | None,
        image: Image | None,
        rootfs: str,
    ) -> ProcessMachine:
        """The machine of ``new_sandbox``, not yet among ``machines``."""
        if image is not None and not isinstance(image, LayerImage):
            raise RuntimeUnavailable(f"a {image.runtime} template cannot start here")
        tree = self.system.tree(rootfs)
        if source is not None:
            tree = source.tree
        elif image is not None:
            tree = image.tree
        if image is not None and not self.system.image:
            copy_tree(image.layer, directory)
            machine = ProcessMachine(self, directory)
        elif image is not None:
            rootfs_made = self._rootfs(directory, disk_mib, image, tree)
            machine = ProcessMachine(self, directory, rootfs_made, tree=tree)
        elif self.system.image:
            copied = source.rootfs if source is not None and source.made else None
            if copied is not None:  # a fork's copy of its source's files, made now
                rootfs_made = self._rootfs(directory, copied.size_mib, copied, tree)
                machine = ProcessMachine(self, directory, rootfs_made, tree=tree)
            else:  # an empty disk, made on first use (the directory now: a restart finds it)
                directory.mkdir(mode=0o700)
                size = disk_mib if source is None else source.disk_size
                machine = ProcessMachine(
                    self,
                    directory,
                    make_rootfs=lambda size: self._rootfs(directory, size, None, tree),
                    disk_mib=size,
                    tree=tree,
                )
        else:
            if source is None:
                make_layout(directory)
                owner = self.files_owner(image=False)
                if owner is not None:
                    idmap.give(directory, owner)
            else:
                copy_tree(source.directory, directory)
            machine = ProcessMachine(self, directory)
        return machine

    def _rootfs(self, directory: Path, size: int, source: Upper | None, tree: str) -> Root:
        """A sandbox's root over ``tree``: its disk an ext4 image file in its directory (in
        memory it would count against the shape's memory); unprivileged, a directory
        (``userroot``)."""
        removals = self._removals
        if removals is None:
            if self._blanks is None:
                self._blanks = Blanks(self.scratch.path / ".blanks")
            return SandboxRoot(self.images(tree), directory, size, source, self._blanks)
        if self._user_image is None:
            assert self.system.root is not None
            layer = self.fake_root.path / ".image-user"
            self._user_image = user_image(layer, self.system.root, self.system.bun)
        return UserRoot.make(removals, self._user_image, directory, size, source)

    def images(self, tree: str = "devbox") -> ImageSpace:
        """The image namespace the sandboxes booting ``tree`` copy, made on first use."""
        space = self._images.get(tree)
        if space is None:
            assert self.ids is not None
            self._proc_view()  # mounted first: the image's namespace copies the mounts once
            suffix = "" if tree == "devbox" else f"-{tree}"
            space = self._images[tree] = ImageSpace(
                self.fake_root.path / f".image{suffix}",
                name=DEVBOX,
                bun=self.system.bun,
                ids=self.ids,
                source=self.system.source(tree),
            )
        return space

    def keep_in(self, path: Path, buckets: Path | None = None) -> None:
        """Make sandboxes in ``path`` (a ``KeptRoot``) and disk buckets in ``buckets``; only
        before the first sandbox."""
        if self._root is not None:
            raise RuntimeError("the process runtime already made its sandbox directory")
        self.kept = path
        self.kept_buckets = buckets

    def builder(self, base: str, clock: Clock, commands: Commands) -> ProcessBuilder:
        """A template build in a sandbox of its own on the tree sandboxes of ``base`` boot
        (``layers``)."""
        machine = self.new_sandbox(f"build-{secrets.token_hex(6)}", rootfs=base)
        address = build_address(self.network().links if self.network_mode.shared else {})
        layers = self.fake_root.path / ".layers"
        return ProcessBuilder(machine, layers, address, clock, self.remove_tree)

    def adopt_image(self, saved: Mapping[str, Any]) -> LayerImage:
        """A template's layer an earlier start left in a kept root."""
        layer = self.fake_root.path / ".layers" / str(saved["layer"])
        if not layer.is_dir() or layer.is_symlink() or layer.parent.name != ".layers":
            raise FileNotFoundError(f"no template layer {saved['layer']}")
        return LayerImage(layer, _kept_tree(saved), self.remove_tree)

    def keeper(self) -> None:
        """None: sandboxes and layers are directories, kept where ``keep_in`` says."""
        return None

    def adopt(self, saved: Mapping[str, Any] | str) -> ProcessMachine:
        """The machine of a sandbox directory an earlier start left in a kept root
        (``saved``: what ``ProcessMachine.saved()`` said, or the directory's name)."""
        name = saved if isinstance(saved, str) else str(saved["directory"])
        directory = self.fake_root.sandbox_dir(name)
        if not directory.is_dir() or directory.is_symlink():
            raise FileNotFoundError(f"no sandbox directory {name}")
        make = None
        tree = "devbox" if isinstance(saved, str) else _kept_tree(saved)
        if self.system.image:

            def make(size: int) -> Root:
                return self._rootfs(directory, size, None, tree)

        machine = ProcessMachine(
            self, directory, lazy_net=True, make_rootfs=make, disk_mib=DISK_MIB, tree=tree
        )
        self.machines[name] = machine
        return machine

    def network(self) -> Network:
        """The sandboxes' network (router, resolver, egress), made on first use."""
        if self._network is None:
            self._network = Network(self.network_options, self.hostnames)
        return self._network

    def hub(self, network_id: str) -> Hub:
        """The bridge of an account network, made on first use."""
        hub = self.hubs.get(network_id)
        if hub is None:
            hub = self.hubs[network_id] = Hub()
        return hub

    def release_hub(self, network_id: str) -> None:
        """Close a network's bridge once no sandbox is plugged into it."""
        hub = self.hubs.get(network_id)
        if hub is not None and not hub.devices:
            del self.hubs[network_id]
            hub.close()

    def kill_processes(self) -> None:
        """Kill every process tree of every sandbox, keeping files and networks (a stop
        begins: a request waiting on a process gets its reply)."""
        for machine in list(self.machines.values()):
            machine.stopping = True  # a run still starting is killed as it registers
            for run in list(machine.runs.values()):
                run.signal(signals.SIGKILL, tree_scope=True)

    def close(self) -> None:
        """Kill every process, remove every directory (a kept root's stay); idempotent."""
        for machine in list(self.machines.values()):
            if self.kept is None:
                machine.destroy()
            else:
                machine.shut_down()
        for hub in self.hubs.values():
            hub.close()
        self.hubs.clear()
        network, self._network = self._network, None
        if network is not None:
            network.close()
        images, self._images = self._images, {}
        for space in images.values():
            space.close()
            remove_tree(space.layer)  # a mount point only (a kept root keeps the rest)
        view, self._procview = self._procview, None
        self._procview_tried = False
        if view is not None:
            view.close()
        if self._removals is not None:
            self._removals.wait()
        self._blanks = None  # in the fake's own directory, which goes next
        root, self._root = self._root, None
        if root is not None:
            root.close()
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            scratch.close()
        self._confinement = None
        self._layout_bwrap = None


def _kept_tree(saved: Mapping[str, Any]) -> str:
    """The tree a kept sandbox or layer booted (``devbox`` for what versions before
    desktop:1 had a tree of its own saved)."""
    return "desktop" if saved.get("tree") == "desktop" else "devbox"
