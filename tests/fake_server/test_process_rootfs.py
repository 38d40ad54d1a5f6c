"""A sandbox's root file system on the process runtime: the disk size, and a kept disk (``serve
--state-dir``) that outlives the fake."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from _process_runtime import no_bwrap_left, sh

from fake_server.runtime.process import ProcessRuntime

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.asyncio

FILL = (
    "head -c 20971520 /dev/zero > /root/big; echo $?; df -m / | tail -1 | tr -s ' ' | cut -d' ' -f2"
)


@pytest_asyncio.fixture(name="kept")
async def _kept(tmp_path: Path) -> AsyncIterator[Path]:
    yield tmp_path / "kept"
    assert await no_bwrap_left()


async def test_a_kept_disk_is_an_image_file_of_the_disk_size_that_outlives_the_fake(
    kept: Path,
) -> None:
    first = ProcessRuntime(kept=kept)
    machine = first.new_sandbox("sb", 16)
    assert await sh(machine, FILL) == (
        0,
        "head: error writing 'standard output': No space left on device\n1\n14\n",
    )
    machine.set_disk_size(64)  # at once with CAP_SYS_RESOURCE, else at the next start
    machine.set_disk_size(32)  # an image file only grows
    assert machine.rootfs is not None
    assert machine.rootfs.size_mib == 64
    machine.disk.write_file("/etc/kept.conf", b"kept\n")
    first.close()
    assert {p.name for p in (kept / "sb").iterdir()} - {"disk.grow"} == {"disk", "disk.img"}
    assert (kept / "sb" / "disk.img").stat().st_blocks * 512 < 64 * 1024 * 1024  # sparse

    second = ProcessRuntime(kept=kept)
    back = second.adopt("sb")
    assert back.rootfs is not None
    assert back.rootfs.size_mib == 64
    assert back.disk.read_file("/etc/kept.conf") == b"kept\n"
    script = f"test -s /root/big && echo kept; id -u; rm /root/big; {FILL}"
    assert await sh(back, script) == (0, "kept\n0\n0\n59\n")
    assert not (kept / "sb" / "disk.grow").exists()
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
        check = "ls /usr/bin/env /etc/apt 2>&1; df -m / | tail -1 | tr -s ' ' | cut -d' ' -f2"
        assert await sh(fork, check) == (
            0,
            "ls: cannot access '/usr/bin/env': No such file or directory\n/etc/apt:\nx\n64\n",
        )
        assert (await sh(runtime.new_sandbox("fresh"), "ls /usr/bin/env"))[1] == "/usr/bin/env\n"
    finally:
        runtime.close()
    assert await no_bwrap_left()
