"""What a process-runtime sandbox's system is, decided once per fake: the image or the layout.

As root, every sandbox boots the ``devbox:1`` image (``image``, ``rootfs``): commands run as
root (uid 0 of a user namespace) on a copy-on-write root of their own, where ``apt-get``,
``pip`` and ``npm -g`` install system-wide. Elsewhere (not root: no mounts), or where the image
cannot be built and the user allowed the fallback, sandboxes get the host-directory layout:
user ``sandbox`` on the host's read-only ``/usr`` (``rootdir.make_layout``).
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.process.containment.mountns import MS_NOSUID, MountSpace, mount
from fake_server.runtime.process.images import debian, desktop_image
from fake_server.runtime.process.images.image import DEVBOX, cache_dir, ensure_bun

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

__all__ = ["System", "build", "choose"]


@dataclass(frozen=True, slots=True)
class System:
    """The image every sandbox boots, or (``missing`` says why) the host-directory layout."""

    bun: Path | None = None
    missing: str | None = None
    #: The Debian 13 tree sandboxes boot (``debian``, with desktop:1's X desktop when
    #: ``desktop_image`` added it); ``None``: the host's own programs.
    root: Path | None = None
    #: Whether ``root`` has the X desktop computer use drives (``desktop_image``).
    desktop: bool = False

    @property
    def image(self) -> bool:
        return self.missing is None

    def describe(self, rootfs: Iterable[str]) -> str:
        """``serve``'s line saying what each rootfs name boots."""
        names = ", ".join(rootfs)
        if self.image:
            what = (
                debian.NAME + (" with an X desktop (Xvfb, evilwm, xdotool)" if self.desktop else "")
                if self.root is not None
                else f"this host's {_host_os()} programs (no {debian.NAME} image yet: "
                "createos-fake image builds it)"
            )
            return (
                f"images: rootfs {names} boot {DEVBOX}: {what} on a copy-on-write root per "
                "sandbox (user root; apt-get, pip, npm -g; bun)"
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
        return System(missing=why)
    try:
        bun = ensure_bun(progress)
        cache = cache_dir()
        desktop = desktop_image.built(cache)
        if desktop is not None:
            return System(bun=bun, root=desktop, desktop=True)
        return System(bun=bun, root=debian.built(cache))
    except RuntimeUnavailable as exc:
        if not fallback:
            raise
        return System(missing=str(exc).split(": ", 1)[1].split(". ", 1)[0])


def build(progress: Callable[[str], None] | None = None) -> System:
    """``createos-fake image``: the image's parts built now (bun, the Debian 13 tree, its X
    desktop), and the system they make; ``RuntimeUnavailable`` saying what to do when one
    cannot be built."""
    why = _no_mounts()
    if why is not None:
        raise RuntimeUnavailable(f"the {DEVBOX} image needs root and mounts: {why}")
    bun = ensure_bun(progress)
    cache = cache_dir()
    base = debian.build(cache, progress)
    return System(bun=bun, root=desktop_image.build(cache, base, progress), desktop=True)


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
