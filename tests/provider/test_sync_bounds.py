"""An outbound directory download is bounded while it streams, not after (spec §4.2's limit).

The sandbox's ``tar -cf`` output is swapped, between the remote step and the GET, for the real
archive followed by 8 MiB more, or for a header that declares 11 GiB: the provider stops
reading at once, fails with the spec's archive message and leaves nothing behind (no host temp
file, no target, no sandbox scratch file, no half-read connection).
"""

from __future__ import annotations

import tarfile
from typing import TYPE_CHECKING, Any

import pytest

from pytest_createos.provider import CreateosError, FileMapping, SyncOperation
from pytest_createos.provider import _sync as sync_module
from pytest_createos.provider._config import parse_config
from pytest_createos.provider._execute import execute_command
from pytest_createos.provider._signal import AbortController
from pytest_createos.provider._sync import sync_files

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from _leased import Leased

W = "/paperclip-workspace"
UNSAFE = "CreateOS archive contains unsafe entries or exceeds the extraction limit."
SERVED = 8 * 1024 * 1024


def _scratch(leased: Leased) -> list[str]:
    disk = leased.fake.sandbox(leased.id).disk
    names = [entry["name"] for entry in disk.fs.read_dir("/tmp")]
    return [f"/tmp/{n}" for n in names if n.startswith("paperclip-createos-transfer-")]


def _entries(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir()]


def _bloated(archive: bytes) -> bytes:
    return archive + b"\x01" * SERVED


def _eleven_gib(archive: bytes) -> bytes:
    del archive
    info = tarfile.TarInfo("./huge")
    info.size = 11 * 1024**3
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "strict") + b"\x02" * SERVED


@pytest.mark.parametrize("swap", [_bloated, _eleven_gib], ids=["trailing", "declared"])
@pytest.mark.asyncio
async def test_an_oversize_archive_download_stops_early(
    leased: Leased,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    swap: Callable[[bytes], bytes],
) -> None:
    disk = leased.fake.sandbox(leased.id).disk
    disk.write_file(f"{W}/d/tiny.txt", b"abc")
    client = leased.provider._client(parse_config(leased.env.config))
    written: list[int] = []
    write_all = sync_module._write_all

    def counting_write(handle: int, data: bytes) -> None:
        written.append(len(data))
        write_all(handle, data)

    monkeypatch.setattr(sync_module, "_write_all", counting_write)

    async def execute_then_swap(*args: Any, **kwargs: Any) -> Any:
        result = await execute_command(*args, **kwargs)
        for path in _scratch(leased):
            disk.write_file(path, swap(disk.read_file(path)))
        return result

    target = tmp_path / "out"
    with pytest.raises(CreateosError) as info:
        await sync_files(
            client,
            leased.id,
            [SyncOperation("op", (FileMapping("directory", f"{W}/d", str(target)),))],
            "out",
            AbortController().signal,
            clock=leased.clock,
            execute=execute_then_swap,
        )
    assert str(info.value) == UNSAFE
    assert sum(written) < 1024 * 1024  # of 8 MiB served
    assert not target.exists()
    assert _entries(tmp_path) == []  # the host temp dir went too
    assert _scratch(leased) == []
    # The half-read response was closed, not returned to the pool mid-body.
    pool = client._http._transport._inner._pool  # type: ignore[attr-defined]  # under the clock transport
    assert [c for c in pool.connections if not (c.is_idle() or c.is_closed())] == []

    # The same client and lease still work.
    result = await leased.provider.sync_out(
        leased.env,
        leased.lease,
        [SyncOperation("again", (FileMapping("directory", f"{W}/d", str(target)),))],
    )
    assert result.operations[0].files_transferred == 1
    assert (target / "tiny.txt").read_bytes() == b"abc"
