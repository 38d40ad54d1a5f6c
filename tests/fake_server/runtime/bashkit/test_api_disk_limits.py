"""The fake disk's caps (bashkit's in-memory filesystem): uploads and shell writes over them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.environment import DISK_LIMIT, FILE_LIMIT

if TYPE_CHECKING:
    import httpx

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


async def test_upload_over_the_file_limit_is_413_and_keeps_the_old_file(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    base = f"/v1/sandboxes/{await make_sandbox()}/files"
    await client.put(base, params={"path": "/tmp/big"}, content=b"old")

    response = await client.put(base, params={"path": "/tmp/big"}, content=b"x" * (FILE_LIMIT + 1))

    assert response.status_code == 413
    assert response.json() == {
        "status": "fail",
        "data": {"body": "file exceeds the fake sandbox's 10000000-byte file limit"},
    }
    assert (await client.get(base, params={"path": "/tmp/big"})).content == b"old"


async def test_upload_at_the_file_limit_is_accepted(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    base = f"/v1/sandboxes/{await make_sandbox()}/files"
    response = await client.put(base, params={"path": "/tmp/max"}, content=b"x" * FILE_LIMIT)
    assert response.json() == {
        "status": "success",
        "data": {"path": "/tmp/max", "bytes": FILE_LIMIT},
    }


async def test_upload_onto_a_full_disk_is_507_and_writes_nothing(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    base = f"/v1/sandboxes/{await make_sandbox()}/files"
    chunk = b"y" * FILE_LIMIT
    for i in range(DISK_LIMIT // FILE_LIMIT - 1):
        assert (await client.put(base, params={"path": f"/f{i}"}, content=chunk)).status_code == 200

    response = await client.put(base, params={"path": "/last"}, content=chunk)

    assert response.status_code == 507
    assert response.json() == {
        "status": "error",
        "code": 507,
        "message": "the fake sandbox's 100000000-byte disk is full",
        "data": {"code": "insufficient_storage"},
    }
    assert (await client.get(base, params={"path": "/last"})).status_code == 404


async def test_shell_write_over_the_file_limit_fails_the_command(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    await client.put(
        f"/v1/sandboxes/{sandbox_id}/files", params={"path": "/m"}, content=b"z" * 6_000_000
    )
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec",
        json={"cmd": "bash", "args": ["-c", "cat /m /m > /out; echo rc=$?"]},
    )
    result = response.json()["data"]["result"]
    assert result["stdout"] == "rc=1\n"
    assert result["stderr"] == "cat: write error: File too large\n"


async def test_shell_write_onto_a_full_disk_says_no_space_left(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}/files"
    for i in range(DISK_LIMIT // FILE_LIMIT - 1):
        await client.put(base, params={"path": f"/f{i}"}, content=b"y" * FILE_LIMIT)
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec",
        json={"cmd": "bash", "args": ["-c", "cat /f0 > /copy; echo rc=$?"]},
    )
    result = response.json()["data"]["result"]
    assert result["stdout"] == "rc=1\n"
    assert result["stderr"].endswith(": No space left on device\n")
    assert "byte limit" not in result["stderr"]
