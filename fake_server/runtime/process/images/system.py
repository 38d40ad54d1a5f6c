"""What a process-runtime sandbox's system is, decided once per fake: the image or the layout.

As root, every sandbox boots the ``devbox:1`` image (``image``, ``rootfs``): commands run as
root (uid 0 of a user namespace) on a copy-on-write root of their own, where ``apt-get``,
``pip`` and ``npm -g`` install system-wide. ``desktop:1`` sandboxes boot the same tree with the
X desktop added (``desktop_image``), every other rootfs the plain one (``tree()``).
Not root, sandboxes boot a tree of the user's own (``debian.user_tree``, which
``createos-fake image`` builds as that user) where pasta gives sandboxes a route out and the
tree is built (``unprivileged``): root inside is the user (``userroot``), the other ids its
subordinate ones where it has 65,536, else no other id is mapped (``Extents.own_id``: ``chown``
does nothing, apt runs as root). Elsewhere, or where the image cannot be built and the user
allowed the fallback, sandboxes get the host-directory layout: user ``sandbox`` on the
host's read-only ``/usr`` (``rootdir.make_layout``).
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.containment.mountns import MS_NOSUID, MountSpace, mount
from fake_server.runtime.process.images import debian, desktop_image
from fake_server.runtime.process.images.image import DEVBOX, cache_dir, ensure_bun
from fake_server.runtime.process.net import netmode

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

__all__ = ["DESKTOP", "System", "build", "choose"]

#: The rootfs whose sandboxes boot the tree with the X desktop (computer use).
DESKTOP = "desktop:1"


@dataclass(frozen=True, slots=True)
class System:
    """The image every sandbox boots, or (``missing`` says why) the host-directory layout."""

    bun: Path | None = None
    missing: str | None = None
    #: The Debian 13 tree sandboxes boot (``debian``); ``None``: the host's own programs.
    root: Path | None = None
    #: The same tree with the X desktop computer use drives (``desktop_image``), which
    #: desktop:1 sandboxes boot; ``None``: not built (they boot ``root``, without a desktop).
    desktop_root: Path | None = None
    #: Not root: the map of the sandboxes booting the user's tree (``userroot``: root inside
    #: is the user); ``None`` as root.
    ids: idmap.Extents | None = None

    @property
    def rootless(self) -> bool:
        """Whether sandboxes boot the image without root (``userroot``)."""
        return self.ids is not None and self.missing is None

    @property
    def image(self) -> bool:
        return self.missing is None

    @property
    def desktop(self) -> bool:
        """Whether desktop:1 sandboxes get a real X desktop."""
        return self.desktop_root is not None

    def tree(self, rootfs: str) -> str:
        """Which tree sandboxes of ``rootfs`` boot: ``desktop`` (``desktop_root``) for
        desktop:1 where it is built, ``devbox`` (``root``) for everything else."""
        return "desktop" if rootfs == DESKTOP and self.desktop else "devbox"

    def source(self, tree: str) -> Path | None:
        """The root file system of ``tree`` (``None``: the host's own programs)."""
        return self.desktop_root if tree == "desktop" else self.root

    def describe(self, rootfs: Iterable[str]) -> str:
        """``serve``'s line saying what each rootfs name boots."""
        names = ", ".join(rootfs)
        if self.image:
            what = (
                debian.NAME
                if self.root is not None
                else f"this host's {_host_os()} programs (no {debian.NAME} image yet: "
                "createos-fake image builds it)"
            )
            desktop = (
                f"; {DESKTOP} adds an X desktop (Xvfb, evilwm, xdotool)" if self.desktop else ""
            )
            user = "user root, you on the host" if self.rootless else "user root"
            return (
                f"images: rootfs {names} boot {DEVBOX}: {what} on a copy-on-write root per "
                f"sandbox ({user}; apt-get, pip, npm -g; bun){desktop}"
            )
        return (
            f"images: rootfs {names} boot the host's programs on a read-only /usr as user "
            f"sandbox (no {DEVBOX} image: {self.missing})"
        )


def choose(*, fallback: bool = False, progress: Callable[[str], None] | None = None) -> System:
    """The system of this fake's sandboxes. Without root: the layout. As root: the image, or
    ``RuntimeUnavailable`` saying what to do when it cannot be built (the layout instead when
    ``fallback`` allows it)."""
    why = _no_mounts()
    if why is not None:
        return System(missing=why) if os.geteuid() == 0 else _unprivileged(progress)
    try:
        bun = ensure_bun(progress)
        cache = cache_dir()
        root = debian.built(cache)
        desktop = desktop_image.built(cache) if root is not None else None
        return System(bun=bun, root=root, desktop_root=desktop)
    except RuntimeUnavailable as exc:
        if not fallback:
            raise
        return System(missing=str(exc).split(": ", 1)[1].split(". ", 1)[0])


def build(progress: Callable[[str], None] | None = None) -> System:
    """``createos-fake image``: the image's parts built now (bun, the Debian 13 tree, its X
    desktop), and the system they make; ``RuntimeUnavailable`` saying what to do when one
    cannot be built."""
    if os.geteuid() != 0:
        ids = _user_ids()
        bun = ensure_bun(progress)
        return System(bun=bun, root=debian.build(cache_dir(), progress, ids), ids=_map(ids))
    why = _no_mounts()
    if why is not None:
        raise RuntimeUnavailable(f"the {DEVBOX} image needs root and mounts: {why}")
    bun = ensure_bun(progress)
    cache = cache_dir()
    base = debian.build(cache, progress)
    desktop = desktop_image.build(cache, base, progress)
    return System(bun=bun, root=base, desktop_root=desktop)


def _user_ids() -> idmap.Subordinate | idmap.OwnId:
    """The caller's subordinate ids where they can map a whole sandbox (65,536 ids), else its
    own id alone, saying why."""
    ids = idmap.unprivileged()
    if isinstance(ids, idmap.Subordinate) and ids.count < idmap.SIZE:
        why = f"/etc/subuid and /etc/subgid give {ids.count} ids, not {idmap.SIZE}"
        return idmap.OwnId(ids.uid, ids.gid, why)
    return ids


def _map(ids: idmap.Subordinate | idmap.OwnId) -> idmap.Extents:
    """The map of sandboxes booting the user's tree: root inside is the caller."""
    if isinstance(ids, idmap.OwnId):
        return idmap.Extents.own_id(ids)
    return idmap.Extents.root_as_caller(ids)


def _unprivileged(progress: Callable[[str], None] | None) -> System:
    """Not root: the user's tree where sandboxes can boot it (see the module's docstring),
    else the layout, saying what is missing."""
    ids = _user_ids()
    mode = netmode.detect()
    if not mode.user_net:
        return System(missing="not root, and sandboxes have no route out (pasta)")
    cache = cache_dir()
    root = debian.built_for(cache, ids)
    if root is None:
        return System(missing="not root, and none is built for your ids (createos-fake image)")
    debian.private(cache)
    try:
        bun = ensure_bun(progress)
    except RuntimeUnavailable as exc:
        return System(missing=f"not root, and {exc}")
    return System(bun=bun, root=root, ids=_map(ids))


@functools.cache
def _no_mounts() -> str | None:
    """Why the fake cannot mount its sandboxes' file systems here, ``None`` when it can."""
    if os.geteuid() != 0:
        return "not root"
    try:
        MountSpace(lambda: mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID, "size=1m")).close()
    except OSError as exc:
        return f"mounts cannot be made: {exc.strerror or type(exc).__name__}"
    return None


@functools.cache
def _host_os() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", "Linux")
    except OSError:
        return "Linux"
