"""The files API moves regular files only, and never waits on anything else.

A FIFO read through the files API once hung every request of the fake until something wrote
to it; an upload to one the same. Now a FIFO, a socket or a device is a 400 naming what it
is, on both runtimes, and nothing opens it for long or writes into it. Downloads stream from
the disk and process-runtime uploads stream to it (no cap of their own): over HTTP on the
process runtime in ``test_process_files.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.files import CHUNK, NotRegularFile, open_source, open_target
from fake_server.runtime.process.storage.dirdisk import DirDisk

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    import httpx


pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


@pytest.fixture(name="disk")
def _disk(tmp_path: Path) -> Iterator[DirDisk]:
    (tmp_path / "root").mkdir()
    os.mkfifo(tmp_path / "root" / "fifo")
    with contextlib.closing(socket.socket(socket.AF_UNIX)) as sock:
        sock.bind(str(tmp_path / "root" / "sock"))
        yield DirDisk(tmp_path)


@pytest.mark.parametrize(("name", "kind"), [("fifo", "FIFO"), ("sock", "socket")])
async def test_a_fifo_or_socket_is_refused_at_once_for_reading_and_writing(
    disk: DirDisk, name: str, kind: str
) -> None:
    for opening in (disk.open_read, disk.open_write, disk.read_file):
        with pytest.raises(NotRegularFile) as caught:
            opening(f"/root/{name}")
        assert (caught.value.kind, caught.value.strerror) == (
            kind,
            f"is a {kind}, not a regular file",
        )
    assert stat.S_ISFIFO(os.stat(disk.root / "root" / "fifo").st_mode)  # still a FIFO


async def test_an_upload_never_writes_into_a_fifo_someone_reads(disk: DirDisk) -> None:
    path = disk.root / "root" / "fifo"
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a reader: the open would succeed
    try:
        with pytest.raises(NotRegularFile, match="is a FIFO"):
            disk.write_file("/root/fifo", b"secret")
        assert os.read(reader, 100) == b""  # nothing was written, and the writer is gone
    finally:
        os.close(reader)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
async def test_a_device_is_refused_without_being_opened(disk: DirDisk) -> None:
    os.mknod(disk.root / "dev-null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    with pytest.raises(NotRegularFile, match="is a character device, not a regular file"):
        disk.open_read("/dev-null")
    with pytest.raises(NotRegularFile, match="is a character device, not a regular file"):
        disk.open_write("/dev-null")


async def test_a_download_reads_a_chunk_at_a_time_from_the_disk(disk: DirDisk) -> None:
    data = os.urandom(2 * CHUNK + 5)
    (disk.root / "root" / "big").write_bytes(data)
    source = open_source(disk, "/root/big")
    try:
        assert source.size == len(data)
        chunks = []
        while chunk := await source.read():
            chunks.append(chunk)
    finally:
        source.close()
    assert [len(c) for c in chunks] == [CHUNK, CHUNK, 5]
    assert b"".join(chunks) == data


async def test_an_upload_to_a_host_disk_has_no_limit_of_its_own(disk: DirDisk) -> None:
    (disk.root / "root" / "old").write_bytes(b"x" * 100)
    target = open_target(disk, "/root/old", limit=10)  # the limit binds in-memory disks only
    try:
        await target.write(b"new ")
        await target.write(b"content, longer than ten bytes")
        await target.finish()
    finally:
        target.close()
    assert (disk.root / "root" / "old").read_bytes() == b"new content, longer than ten bytes"


# -- through the API, on both runtimes --------------------------------------------------------


async def test_bashkit_refuses_a_fifo_as_the_process_runtime_does(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    made = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "mkfifo", "args": ["/root/fifo"]}
    )
    assert made.json()["data"]["result"]["exit_code"] == 0
    files = f"/v1/sandboxes/{sandbox_id}/files"
    refused = {"status": "fail", "data": {"path": "is a FIFO, not a regular file"}}
    download = await client.get(files, params={"path": "/root/fifo"})
    assert (download.status_code, download.json()) == (400, refused)
    upload = await client.put(files, params={"path": "/root/fifo"}, content=b"x")
    assert (upload.status_code, upload.json()) == (400, refused)


async def test_a_descriptor_closed_during_a_read_closes_once_the_read_returns() -> None:
    from fake_server.runtime.files import _Descriptor

    read_end, write_end = os.pipe()
    file = _Descriptor(read_end)
    reading = asyncio.ensure_future(file.run(os.read, 10))  # blocks in the executor
    await asyncio.sleep(0)  # the read is handed to the executor
    file.close()
    os.fstat(read_end)  # still open: the read holds it
    os.write(write_end, b"late")
    assert await asyncio.wait_for(reading, timeout=10) == b"late"
    await asyncio.sleep(0)  # the close runs as the read's callback
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(read_end)
    os.close(write_end)
