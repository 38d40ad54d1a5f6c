"""The files API on the process runtime over HTTP: a FIFO is a 400 that stalls nothing, and an
upload streams to the sandbox's disk past bashkit's 10 MB file limit."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pytest
from _process_runtime import api_sh

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    import httpx


pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


async def test_the_process_runtime_refuses_a_fifo_while_other_requests_go_on(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    assert (await api_sh(client, sandbox_id, "mkfifo /root/fifo"))["exit_code"] == 0
    files = f"/v1/sandboxes/{sandbox_id}/files"
    refused = {"status": "fail", "data": {"path": "is a FIFO, not a regular file"}}
    download = await client.get(files, params={"path": "/root/fifo"})
    assert (download.status_code, download.json()) == (400, refused)
    upload = await client.put(files, params={"path": "/root/fifo"}, content=b"x")
    assert (upload.status_code, upload.json()) == (400, refused)
    assert (await client.get("/readyz")).status_code == 200


async def test_the_process_runtime_takes_an_upload_past_bashkits_file_limit(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    files = f"/v1/sandboxes/{sandbox_id}/files"
    data = os.urandom(1024) * (12 * 1024)  # 12 MiB: past the 10 MB read ahead and bashkit's cap

    def body() -> Iterator[bytes]:  # chunked: no Content-Length announced
        for start in range(0, len(data), 1 << 20):
            yield data[start : start + (1 << 20)]

    upload = await client.put(files, params={"path": "/root/big"}, content=_aiter(body()))
    assert upload.json() == {"status": "success", "data": {"path": "/root/big", "bytes": len(data)}}
    download = await client.get(files, params={"path": "/root/big"})
    assert download.content == data
    sums = await api_sh(client, sandbox_id, "wc -c < /root/big")
    assert sums["stdout"] == f"{len(data)}\n"


async def _aiter(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
