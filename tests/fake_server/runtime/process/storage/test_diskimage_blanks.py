"""New sandbox disks as sparse copies of a blank ext4 image made once per capacity
(``diskimage.Blanks``), and mkfs.ext4 where a copy cannot be made sparse."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest
from _needs import needs

from fake_server.runtime.process.storage import diskimage

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

_SBIN = "/usr/sbin:/usr/bin:/sbin:/bin"
pytestmark = needs(
    None if shutil.which("e2fsck", path=_SBIN) else "e2fsprogs", "apt-get install e2fsprogs"
)
_MIB = 1024 * 1024


@pytest.fixture(name="mkfs_runs")
def _mkfs_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The capacity of each image mkfs.ext4 made, in order."""
    made: list[int] = []
    real: Callable[[Path, int], None] = diskimage._make_ext4

    def counted(path: Path, size_mib: int) -> None:
        made.append(size_mib)
        real(path, size_mib)

    monkeypatch.setattr(diskimage, "_make_ext4", counted)
    return made


def _checked(path: Path, capacity_mib: int) -> None:
    """``path`` is a clean ext4 file system of ``capacity_mib``, its holes kept."""
    fsck = shutil.which("e2fsck", path=_SBIN)
    assert fsck is not None
    done = subprocess.run([fsck, "-fn", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    stat = path.stat()
    assert stat.st_size == capacity_mib * _MIB
    assert stat.st_blocks * 512 < 16 * _MIB


def test_disks_of_a_capacity_are_copies_of_one_blank(tmp_path: Path, mkfs_runs: list[int]) -> None:
    blanks = diskimage.Blanks(tmp_path / "blanks")
    first = diskimage.DiskImage(tmp_path / "first.img", 1024, blanks)
    second = diskimage.DiskImage(tmp_path / "second.img", 1024, blanks)
    assert mkfs_runs == [first.capacity_mib]  # the blank's: the disks are copies
    assert second.capacity_mib == first.capacity_mib
    for disk in (first, second):
        _checked(disk.path, disk.capacity_mib)
        assert disk.size_mib == 1024


def test_the_blanks_of_the_last_capacities_used_are_kept(
    tmp_path: Path, mkfs_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(diskimage.Blanks, "KEEP", 2)
    blanks = diskimage.Blanks(tmp_path / "blanks")
    for number, capacity in enumerate((16, 17, 16, 18, 16, 17)):
        assert blanks.copy(tmp_path / f"{number}.img", capacity)
        _checked(tmp_path / f"{number}.img", capacity)
    # 17 was dropped for 18 (16 was used since), then made again
    assert mkfs_runs == [16, 17, 18, 17]
    assert sorted(p.name for p in blanks.directory.iterdir()) == ["16.img", "17.img"]


def test_a_blank_not_copied_sparse_leaves_the_disk_to_mkfs(
    tmp_path: Path, mkfs_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that cannot tell data from holes would make every copy whole: past a
    few MiB of data, the copy is not made and mkfs.ext4 makes the disk."""
    monkeypatch.setattr(diskimage, "_BLANK_DATA_LIMIT", 0)
    blanks = diskimage.Blanks(tmp_path / "blanks")
    assert not blanks.copy(tmp_path / "refused.img", 16)
    assert not (tmp_path / "refused.img").exists()
    disk = diskimage.DiskImage(tmp_path / "disk.img", 16, blanks)
    assert mkfs_runs == [16, disk.capacity_mib, disk.capacity_mib]
    _checked(disk.path, disk.capacity_mib)


def test_a_copy_between_file_systems_goes_through_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def across(*args: object) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(diskimage.os, "copy_file_range", across)
    blanks = diskimage.Blanks(tmp_path / "blanks")
    assert blanks.copy(tmp_path / "disk.img", 32)
    _checked(tmp_path / "disk.img", 32)


def test_a_failed_copy_leaves_the_disk_to_mkfs(
    tmp_path: Path, mkfs_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy that fails (here the kernel's copy) leaves no half-made disk: mkfs.ext4 makes
    it, and says why if it cannot either; the blank stays for the next disk."""

    def failing(*args: object) -> int:
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as patched:
        patched.setattr(diskimage.os, "copy_file_range", failing)
        blanks = diskimage.Blanks(tmp_path / "blanks")
        assert not blanks.copy(tmp_path / "refused.img", 16)
        assert not (tmp_path / "refused.img").exists()
        disk = diskimage.DiskImage(tmp_path / "disk.img", 16, blanks)
        _checked(disk.path, disk.capacity_mib)
        assert mkfs_runs == [16, disk.capacity_mib, disk.capacity_mib]
    assert blanks.copy(tmp_path / "later.img", 16)
    _checked(tmp_path / "later.img", 16)
    assert mkfs_runs == [16, disk.capacity_mib, disk.capacity_mib]  # the blank was kept


def test_a_blank_that_cannot_be_made_leaves_the_disk_to_mkfs(
    tmp_path: Path, mkfs_runs: list[int]
) -> None:
    (tmp_path / "taken").write_text("a file where the blanks' directory would go")
    blanks = diskimage.Blanks(tmp_path / "taken" / "blanks")
    assert not blanks.copy(tmp_path / "refused.img", 16)
    disk = diskimage.DiskImage(tmp_path / "disk.img", 16, blanks)
    _checked(disk.path, disk.capacity_mib)
    assert mkfs_runs == [disk.capacity_mib]
    assert sorted(os.listdir(tmp_path)) == ["disk.img", "taken"]
