"""``serve --state-dir`` for the bashkit runtime: its in-memory trees as manifests.

Persistence stores a snapshot per owner (a sandbox, a template's image, a part of a disk
bucket) and hands it back; this is the only place that knows they are bashkit filesystems.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fake_server.runtime.bashkit import manifests
from fake_server.runtime.bashkit.deferred import DeferredDisk
from fake_server.runtime.bashkit.disk import SandboxDisk
from fake_server.runtime.bashkit.images import BashkitImage
from fake_server.runtime.bashkit.mounts import Bucket, MountingDisk, empty_bucket

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import bashkit

    from fake_server.runtime.api import Blobs, Image, Machine, SharedBucket
    from fake_server.runtime.bashkit.manifests import Manifest

__all__ = ["BashkitKeeper"]


class _Adopts(Protocol):
    """What the keeper uses of its runtime (``BashkitRuntime``)."""

    def adopt_disk(self, disk: SandboxDisk) -> Machine: ...


class BashkitKeeper:
    """The ``FileKeeper`` of one bashkit runtime."""

    def __init__(self, runtime: _Adopts) -> None:
        self._runtime = runtime

    def files(self, machine: Machine) -> bashkit.FileSystem | None:
        disk = machine.disk
        if not isinstance(disk, SandboxDisk):
            return None  # another runtime's
        if isinstance(disk, DeferredDisk) and not disk.loaded:
            return None  # restored and not used since: its files are as saved
        return disk.fs

    def image_files(self, image: Image) -> bashkit.FileSystem | None:
        return image.disk.fs if isinstance(image, BashkitImage) else None

    def bucket_files(self, bucket: SharedBucket) -> dict[str, Any]:
        return bucket.parts

    def fresh(self, blobs: Blobs) -> Manifest:
        return manifests.snapshot(MountingDisk().fs, blobs)

    def snapshot(
        self,
        files: bashkit.FileSystem,
        blobs: Blobs,
        previous: Manifest | None = None,
        *,
        copied_from: Manifest | None = None,
        copied_before: float = float("inf"),
    ) -> Manifest:
        return manifests.snapshot(
            files, blobs, previous, copied_from=copied_from, copied_before=copied_before
        )

    def unchanged(self, files: bashkit.FileSystem, snapshot: Manifest) -> bool:
        return manifests.unchanged(files, snapshot)

    def same_files(self, one: Manifest, other: Manifest) -> bool:
        return manifests.same_files(one, other)

    def references(self, snapshots: Iterable[Manifest]) -> set[str]:
        return {entry[5] for manifest in snapshots for entry in manifest if entry[1] == "f"}

    def restore(
        self, files: bashkit.FileSystem, snapshot: Manifest, read: Callable[[str], bytes]
    ) -> None:
        manifests.restore(files, snapshot, read)

    def adopt(self, fill: Callable[[Any, Callable[[], None]], None]) -> Machine:
        def deferred(disk: DeferredDisk) -> None:
            fill(disk.fs, disk.install_image)

        return self._runtime.adopt_disk(DeferredDisk(deferred))

    def empty_files(self) -> bashkit.FileSystem:
        return empty_bucket()

    def restored_bucket(self, parts: dict[str, Any]) -> Bucket:
        parts.setdefault("", empty_bucket())
        return Bucket.restored(parts)

    def restored_image(self, files: Callable[[Any], None]) -> BashkitImage:
        disk = SandboxDisk(image=False)
        files(disk.fs)
        return BashkitImage(disk)
