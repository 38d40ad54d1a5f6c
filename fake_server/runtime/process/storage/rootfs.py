"""A sandbox's copy-on-write root file system: overlayfs over the image, on a disk of its own.

Each sandbox has a mount namespace of its own (``mountns``), a copy of the runtime's image
namespace (``ImageSpace``: the mask layer on a small tmpfs over the host's root, both seen
through idmapped mounts with the sandboxes' id range, ``idmap``). In it the sandbox's
directory holds ``disk``, the mount point of its disk: an ext4 image file of the disk's size
(``disk.img``, sparse: blocks are taken as files are written) on a loop device, with the
overlay's ``upper`` and ``work`` directories. The overlay of ``upper`` over the image is
mounted at ``/mnt`` of that namespace (nowhere else), and the sandbox's processes get it as
``/`` (they enter the namespace with ``nsenter --mount``). A disk, not memory, as on a VM: what
a sandbox writes never counts against its shape's memory (``cgroups``), and writing past the
disk size fails with ENOSPC inside. The fake reaches the files through descriptors opened
inside (``view``), fork copies ``upper`` into the new sandbox's disk before mounting its
overlay, and closing the namespace (destroy, or the fake's death) unmounts it all; the image
file goes with the sandbox's directory, or stays where sandboxes are kept across restarts
(``serve --state-dir``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.containment.mountns import (
    MS_BIND,
    MS_NODEV,
    MS_NOSUID,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    MS_SHARED,
    MountSpace,
    attach,
    idmapped,
    mount,
    unmount,
)
from fake_server.runtime.process.images.image import BUN_GUEST, Image, write_mask
from fake_server.runtime.process.storage.diskimage import Blanks, DiskImage
from fake_server.runtime.process.storage.rootdir import remove_tree, shift_owners

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.runtime.process.containment.idmap import IdRange
    from fake_server.runtime.process.net.usernet import UserNet

__all__ = ["DISK_MIB", "ImageSpace", "SandboxRoot", "Upper"]

#: A new sandbox's disk size until its sandbox says otherwise (the shapes' default).
DISK_MIB = 10240

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: Size of the tmpfs holding the mask layer (a few hundred small entries).
_MASK_SIZE = "4m"
_HOST_ROOT = Path("/")
#: Where a sandbox's root is mounted in its own mount namespace (nowhere else): a path the
#: sandbox's root, an unprivileged id on the host, can reach, as its init's bwrap must.
_MOUNT_POINT = Path("/mnt")


class ImageSpace:
    """The runtime's image namespace: the mask layer (on a tmpfs) over the host's root, both
    seen through idmapped mounts with the sandboxes' id range (``idmap``), so the host's root
    owns nothing a sandbox sees: its files belong to the sandbox's root."""

    def __init__(
        self,
        layer: Path,
        *,
        name: str,
        bun: Path | None,
        ids: IdRange,
        source: Path | None = None,
    ) -> None:
        """``source``: the root file system sandboxes boot (the Debian 13 tree); ``None``: the
        host's own, with what it keeps personal masked."""
        layer.mkdir(mode=0o711, exist_ok=True)  # a kept root may hold it from a killed fake
        self.layer = layer
        self.ids = ids
        mask, lower_mask, lower_host = layer / "mask", layer / "idmask", layer / "idhost"
        for path in (mask, lower_mask, lower_host):
            path.mkdir(mode=0o700, exist_ok=True)
        #: The map idmapped mounts take (host uid 0 shows as the sandbox's root).
        self.userns = idmap.userns(ids)
        userns = self.userns
        root = _HOST_ROOT if source is None else source

        def setup() -> None:
            mount("tmpfs", str(mask), "tmpfs", MS_NOSUID | MS_NODEV, f"size={_MASK_SIZE}")
            write_mask(mask, root, bun=bun is not None, personal=source is None)
            mount("none", str(mask), None, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_RDONLY)
            for layer_path, target in ((str(mask), lower_mask), (str(root), lower_host)):
                clone = idmapped(layer_path, userns, readonly=True)
                try:
                    attach(clone, str(target))
                finally:
                    os.close(clone)

        try:
            self.space: MountSpace[None] = MountSpace(setup)
        except BaseException:
            os.close(self.userns)
            raise
        binds = ((str(bun), BUN_GUEST),) if bun is not None else ()
        self.image = Image(name, f"{lower_mask}:{lower_host}", binds)

    def close(self) -> None:
        self.space.close()
        if self.userns >= 0:
            os.close(self.userns)
        self.userns = -1


class Upper(Protocol):
    """What a new root's upper directory starts as a copy of: a fork's source, a template's
    layer (``layers``)."""

    def open_upper(self) -> int: ...


class SandboxRoot:
    """One sandbox's overlay root in its own mount namespace (see the module's docstring).

    A directory that already holds a disk image (a restart of ``serve --state-dir``) mounts it
    again as it was (``diskimage``).
    """

    def __init__(
        self,
        images: ImageSpace,
        directory: Path,
        size_mib: int,
        source: Upper | None,
        blanks: Blanks | None = None,
    ) -> None:
        self.directory = directory
        disk = directory / "disk"
        root = _MOUNT_POINT
        directory.mkdir(mode=0o700, exist_ok=True)  # made with the sandbox, if not a fork's
        disk.mkdir(exist_ok=True)
        self._image = DiskImage(directory / "disk.img", size_mib, blanks)
        image_file = self._image
        image = images.image
        userns, owner = images.userns, images.ids.owner
        upper_fd = source.open_upper() if source is not None else None
        copy_from = None if upper_fd is None else f"/proc/{os.getpid()}/fd/{upper_fd}"

        def setup() -> int:
            image_file.mount(str(disk))
            (disk / "work").mkdir(exist_ok=True)
            upper = disk / "upper"
            upper.mkdir(exist_ok=True)
            if copy_from is not None:
                _copy(copy_from + "/.", str(upper))
            shift_owners(upper, owner[0])  # made here, or kept by a version before id ranges
            options = f"lowerdir={image.lowerdir},upperdir={upper},workdir={disk}/work"
            mount("overlay", str(root), "overlay", 0, options)
            for host, guest in image.binds:
                clone = idmapped(host, userns, readonly=True)
                try:
                    attach(clone, str(root) + guest)
                finally:
                    os.close(clone)
            # what ``bind`` mounts later under it reaches the init's namespace (a slave copy)
            mount("none", str(root), None, MS_SHARED | MS_REC)
            return os.open(root, _DIR)

        try:
            self._space = MountSpace(setup, parent=images.space)
        finally:
            if upper_fd is not None:
                os.close(upper_fd)
        self._root_fd = self._space.result

    #: The namespaces its network is made in (``UserRoot``'s): none, the fake's router wires it.
    usernet: UserNet | None = None

    @property
    def root(self) -> str:
        """The merged root as the sandbox's processes get it, a path inside the namespace."""
        return str(_MOUNT_POINT)

    @property
    def view(self) -> str:
        """The merged root as the fake reaches it (a path through one of its descriptors)."""
        return f"/proc/{os.getpid()}/fd/{self._root_fd}"

    def open_upper(self) -> int:
        """A descriptor of the upper layer (what the sandbox changed); the caller closes it.
        (Only the root is kept open: two descriptors per sandbox, with its namespace's.)"""
        upper = str(self.directory / "disk" / "upper")
        return self._space.run(lambda: os.open(upper, _DIR))

    def enter_args(self) -> list[str]:
        """``nsenter``'s option that puts a process in this namespace."""
        return [f"--mount={self._space.path}"]

    def bind(self, source: Callable[[], int], target: int) -> None:
        """Bind-mount the directory ``source()`` opens on ``target`` (a descriptor of a
        directory under the root): every process of the sandbox sees it there at once.
        ``source`` runs inside the namespace (the kernel binds only a mount of its own)."""

        def inside() -> None:
            fd = source()
            try:
                mount(f"/proc/self/fd/{fd}", f"/proc/self/fd/{target}", None, MS_BIND)
            finally:
                os.close(fd)

        self._space.run(inside)

    def unbind(self, target: int) -> None:
        """Undo ``bind`` (``target``: a descriptor of the mounted directory)."""
        self._space.run(lambda: unmount(f"/proc/self/fd/{target}"))

    @property
    def size_mib(self) -> int:
        """The disk's size: ENOSPC past it."""
        return self._image.size_mib

    def resize(self, size_mib: int) -> None:
        """Grow the disk: ENOSPC comes at ``size_mib`` from now on (the API only grows disks).
        ``FeatureUnavailable`` where this host cannot grow it that far while it is mounted."""
        self._space.run(lambda: self._image.resize(size_mib))

    def copy_upper(self, target: Path) -> None:
        """Copy the upper layer (what the sandbox changed) into the new directory ``target``
        with its overlay markers (a template's layer)."""
        target.mkdir(mode=0o755)
        upper = self.open_upper()
        try:
            _copy(f"/proc/{os.getpid()}/fd/{upper}/.", str(target), _LAYER_FAILED)
        finally:
            os.close(upper)

    def remove(self) -> None:
        """Remove the sandbox's directory (its disk image with it)."""
        remove_tree(self.directory)

    def close(self) -> None:
        """Release the namespace: its mounts go once the last process in it has died."""
        if self._root_fd >= 0:
            os.close(self._root_fd)
        self._root_fd = -1
        self._space.close()


#: Why a copy of an upper layer failed: a fork's, a template's layer's.
_FORK_FAILED = "cannot copy the sandbox's files (the fork's disk may be too small)"
_LAYER_FAILED = "cannot copy the build's files into the template's layer"


def _copy(source: str, target: str, failed: str = _FORK_FAILED) -> None:
    """Copy an upper layer with its overlay markers (xattrs, whiteout devices); ``OSError``
    saying ``failed`` when ``cp`` fails."""
    done = subprocess.run(
        ["cp", "-a", "--", source, target], capture_output=True, check=False, env={}
    )
    if done.returncode != 0:
        raise OSError(failed)
