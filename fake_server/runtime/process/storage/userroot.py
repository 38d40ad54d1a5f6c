"""A sandbox's copy-on-write root as an unprivileged fake makes it: overlayfs that root of the
sandbox's own user namespace mounts.

Without root the fake can neither mount nor make a loop disk. Root of the user namespace H
that holds the sandbox's network (``usernet``, with a mount namespace of its own here) can:
it mounts an overlay there (``userxattr``: the overlay's markers are ``user.overlay.*``
attributes) of the sandbox's ``upper`` directory, in its directory on the host, over the
mask layer (``ImageSpace``'s, written with user attributes) and the image tree built for the
caller's map (``debian``: root's files are the caller's, every other id's the caller's
subordinate ids, ``idmap.Extents``). The init's bwrap, run as H's root in that namespace,
binds it as ``/``. The fake reaches the merged root through H's holder
(``/proc/<holder>/root``), opened once, as the root runtime's ``view``: what it writes there
belongs to the caller, the sandbox's root. Forks copy ``upper``, and destroys remove it, as
root of a user namespace with the same map (``subids``): the caller alone may not touch the
files of the sandbox's other ids. A destroy renames the directory out of the way at once and
removes it from a thread (``Removals``): a tree of many files never holds the fake's loop.

No disk size: without a loop device ``upper`` is on the host's file system, so a size is
recorded, not enforced. A directory of the tree cannot be renamed inside (overlayfs answers
EXDEV under ``userxattr``; ``mv`` copies instead).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import threading
from typing import TYPE_CHECKING

from fake_server.runtime.process.containment import subids
from fake_server.runtime.process.images.image import BUN_GUEST, DEVBOX, Image, write_mask
from fake_server.runtime.process.net.usernet import UserNet
from fake_server.runtime.process.storage.rootdir import TRASH

if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypeAlias

    from fake_server.runtime.process.containment.idmap import Extents
    from fake_server.runtime.process.storage.rootfs import SandboxRoot, Upper

    #: A sandbox's own root file system: as root on a disk (``rootfs``), else ``UserRoot``.
    Root: TypeAlias = "SandboxRoot | UserRoot"

__all__ = ["Removals", "Root", "UserRoot", "user_image"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def user_image(layer: Path, tree: Path, bun: Path | None) -> Image:
    """The image of the sandboxes of one unprivileged fake: the mask layer, written once into
    the directory ``layer`` (the caller's files: root's inside), over ``tree``."""
    mask = layer / "mask"
    if not mask.is_dir():  # a kept root has it from an earlier start
        layer.mkdir(mode=0o711, exist_ok=True)
        staging = layer / "mask.new"
        shutil.rmtree(staging, ignore_errors=True)  # a start killed while writing it
        staging.mkdir(mode=0o755)
        write_mask(staging, tree, bun=bun is not None, personal=False, marks="user")
        os.rename(staging, mask)
    binds = ((str(bun), BUN_GUEST),) if bun is not None else ()
    return Image(DEVBOX, f"{mask}:{tree}", binds)


class Removals:
    """Directories of an unprivileged fake's sandboxes being removed, each by a thread of its
    own, as root of a namespace with the sandboxes' ids (``subids``); ``wait`` joins them."""

    def __init__(self, ids: Extents) -> None:
        #: The sandboxes' map.
        self.ids = ids
        self._threads: list[threading.Thread] = []

    def remove(self, directory: Path) -> None:
        """Rename ``directory`` out of the way now and remove it in the background."""
        trash = directory.with_name(f"{TRASH}{directory.name}-{secrets.token_hex(4)}")
        os.rename(directory, trash)
        thread = threading.Thread(
            target=self._remove, args=(trash,), name="createos-remove", daemon=True
        )
        self._threads = [alive for alive in self._threads if alive.is_alive()]
        self._threads.append(thread)
        thread.start()

    def _remove(self, trash: Path) -> None:
        with contextlib.suppress(OSError):  # what is left goes with the fake's directory
            subids.remove(self.ids, str(trash))

    def wait(self) -> None:
        """Until every removal started has ended (the fake's close)."""
        threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()


class UserRoot:
    """One sandbox's overlay root in the mount namespace of its ``usernet`` (see the module's
    docstring); a directory that holds ``upper`` already (a restart of ``serve
    --state-dir``) mounts it again as it was."""

    @classmethod
    def make(
        cls,
        removals: Removals,
        image: Image,
        directory: Path,
        size_mib: int,
        source: Upper | None,
    ) -> UserRoot:
        """A sandbox's root, with the namespaces it is mounted in made now."""
        usernet = UserNet(removals.ids)
        try:
            return cls(usernet, removals, image, directory, size_mib, source)
        except BaseException:
            usernet.close()
            raise

    def __init__(
        self,
        usernet: UserNet,
        removals: Removals,
        image: Image,
        directory: Path,
        size_mib: int,
        source: Upper | None,
    ) -> None:
        self.directory = directory
        #: The namespaces the sandbox's are made in; the machine's wiring closes them.
        self.usernet = usernet
        self._removals = removals
        ids = self._ids = removals.ids
        self._size_mib = size_mib
        upper, work, root = directory / "upper", directory / "work", directory / "root"
        directory.mkdir(mode=0o700, exist_ok=True)
        for path in (upper, work, root):
            path.mkdir(exist_ok=True)
        if source is not None:  # by its path: a namespace's process may not use the fake's fds
            fd = source.open_upper()
            try:
                copied = os.readlink(f"/proc/self/fd/{fd}") + "/."
            finally:
                os.close(fd)
            try:
                subids.run_mapped(ids, ["cp", "-a", "--", copied, str(upper)])
            except OSError:
                raise OSError("cannot copy the sandbox's files") from None
        options = f"lowerdir={image.lowerdir},upperdir={upper},workdir={work},userxattr"
        usernet.run_inside(
            ["mount", "-t", "overlay", "-o", options, "overlay", str(root)], mount=True
        )
        for host, guest in image.binds:
            usernet.run_inside(["mount", "--bind", "-o", "ro", host, f"{root}{guest}"], mount=True)
        self._root = root
        self._root_fd = os.open(f"/proc/{usernet.holder}/root{root}", _DIR)

    @property
    def root(self) -> str:
        """The merged root as the init's bwrap finds it (in H's mount namespace)."""
        return str(self._root)

    @property
    def view(self) -> str:
        """The merged root as the fake reaches it (a path through one of its descriptors)."""
        return f"/proc/{os.getpid()}/fd/{self._root_fd}"

    def open_upper(self) -> int:
        """A descriptor of the upper layer (what the sandbox changed); the caller closes it."""
        return os.open(self.directory / "upper", _DIR)

    def enter_args(self) -> list[str]:
        """``nsenter``'s option that puts a process in H's mount namespace (after H's user
        namespace: only H's root may enter it)."""
        return [f"--mount=/proc/{self.usernet.holder}/ns/mnt"]

    @property
    def size_mib(self) -> int:
        """The disk's size as the API reports it (recorded, not enforced: no loop device)."""
        return self._size_mib

    def resize(self, size_mib: int) -> None:
        self._size_mib = size_mib

    def close(self) -> None:
        """Close the view; the mounts go with H's mount namespace (the wiring closes H)."""
        if self._root_fd >= 0:
            os.close(self._root_fd)
        self._root_fd = -1

    def copy_upper(self, target: Path) -> None:
        """Copy the upper layer (what the sandbox changed) into the new directory ``target``
        with its owners and overlay markers (a template's layer)."""
        target.mkdir(mode=0o755)
        upper = f"{self.directory / 'upper'}/."
        try:
            subids.run_mapped(self._ids, ["cp", "-a", "--", upper, str(target)])
        except OSError:
            raise OSError("cannot copy the build's files into the template's layer") from None

    def remove(self) -> None:
        """Remove the sandbox's directory, whichever of its ids own the files in it (renamed
        now, removed in the background: ``Removals``)."""
        self._removals.remove(self.directory)
