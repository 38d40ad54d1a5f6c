"""A sandbox's root file system on the process runtime: the disk size, and a kept disk (``serve
--state-dir``) that outlives the fake."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from _process_runtime import no_bwrap_left, sh

from fake_server.runtime.api import FeatureUnavailable
from fake_server.runtime.process import ProcessRuntime
from fake_server.runtime.process.storage import diskimage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.asyncio

#: Writes 20 MiB, then what got written (MiB) and what is left, as ``df`` says; ``df``'s Size
#: column is left out: where a mounted disk cannot grow it shows the disk's room to grow
#: (``diskimage``), and ext4's own metadata takes a few MiB of a small disk.
FILL = (
    "head -c 20971520 /dev/zero > /root/big; echo $?; du -m /root/big | cut -f1; "
    "df -m --output=avail / | tail -1 | tr -d ' '"
)


def _written(out: str) -> tuple[str, int, int]:
    """FILL's output: the last line of head's complaint (if any), MiB written, MiB left."""
    *head, code, written, left = out.splitlines()
    return (head[-1] if head else "") + f" status {code}", int(written), int(left)


@pytest_asyncio.fixture(name="kept")
async def _kept(tmp_path: Path) -> AsyncIterator[Path]:
    yield tmp_path / "kept"
    assert await no_bwrap_left()


async def test_a_kept_disk_is_an_image_file_of_the_disk_size_that_outlives_the_fake(
    kept: Path,
) -> None:
    first = ProcessRuntime(kept=kept)
    machine = first.new_sandbox("sb", 16)
    code, out = await sh(machine, FILL)
    complaint, written, left = _written(out)
    assert code == 0
    assert complaint == "head: error writing 'standard output': No space left on device status 1"
    assert 12 <= written <= 16  # the disk's 16 MiB less ext4's own share
    assert left == 0
    machine.set_disk_size(64)
    machine.set_disk_size(32)  # a disk only grows
    assert machine.rootfs is not None
    assert machine.rootfs.size_mib == 64
    machine.disk.write_file("/etc/kept.conf", b"kept\n")
    first.close()
    assert {p.name for p in (kept / "sb").iterdir()} == {"disk", "disk.img"}
    assert (kept / "sb" / "disk.img").stat().st_blocks * 512 < 64 * 1024 * 1024  # sparse

    second = ProcessRuntime(kept=kept)
    back = second.adopt({"directory": "sb"})
    assert back.rootfs is not None
    assert back.rootfs.size_mib == 64
    assert back.disk.read_file("/etc/kept.conf") == b"kept\n"
    code, out = await sh(back, f"test -s /root/big && echo kept; id -u; rm /root/big; {FILL}")
    assert (code, out.splitlines()[:3]) == (0, ["kept", "0", "0"])  # 20 MiB fit now
    assert 38 <= _written(out)[2] <= 44  # what is left of 64 MiB
    back.destroy()
    second.close()
    assert os.listdir(kept) == []


async def test_a_fork_copies_what_was_changed_removed_and_replaced(tmp_path: Path) -> None:
    """The fork's copy of the upper layer keeps overlayfs's markers: a removed image file
    (a whiteout) stays removed, a replaced directory (opaque) stays replaced."""
    runtime = ProcessRuntime(base=tmp_path / "sandboxes")
    try:
        source = runtime.new_sandbox("sb", 64)
        script = "rm /usr/bin/env && rm -r /etc/apt && mkdir /etc/apt && echo mine > /etc/apt/x"
        assert await sh(source, script) == (0, "")
        fork = source.fork()
        check = "ls /usr/bin/env /etc/apt 2>&1; df -m --output=used,avail / | tail -1"
        code, out = await sh(fork, check)
        *listed, sizes = out.splitlines()
        assert (code, listed) == (
            0,
            ["ls: cannot access '/usr/bin/env': No such file or directory", "/etc/apt:", "x"],
        )
        assert 58 <= sum(int(n) for n in sizes.split()) <= 64  # the source's 64 MiB disk
        assert (await sh(runtime.new_sandbox("fresh"), "ls /usr/bin/env"))[1] == "/usr/bin/env\n"
    finally:
        runtime.close()
    assert await no_bwrap_left()


async def test_a_disk_that_cannot_grow_while_mounted_has_room_to_grow_and_says_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without CAP_SYS_RESOURCE (as on this project's CI) a disk is made with room to grow: a
    resize within it takes effect at once, one past it is refused with the reason and the
    disk stays as it was."""
    monkeypatch.setattr(diskimage, "grows_online", lambda: False)
    runtime = ProcessRuntime(base=tmp_path / "sandboxes")
    try:
        machine = runtime.new_sandbox("sb", 16)
        assert (await sh(machine, FILL))[1].splitlines()[-1] == "0"  # full
        machine.set_disk_size(64)
        assert (await sh(machine, "rm /root/big; " + FILL))[1].splitlines()[:1] == ["0"]
        with pytest.raises(FeatureUnavailable) as refused:
            machine.set_disk_size(diskimage.HEADROOM_MIB + 1)
        assert str(refused.value) == (
            f"the disk can grow to at most {diskimage.HEADROOM_MIB} MiB while its sandbox runs: "
            "growing an ext4 disk in use needs CAP_SYS_RESOURCE, which this host withholds "
            "from the fake"
        )
        assert machine.rootfs is not None
        assert machine.rootfs.size_mib == 64
    finally:
        runtime.close()
    assert await no_bwrap_left()
