"""Buffered and streamed exec, and file transfer, over HTTP."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS
    from fake_server.runtime.bashkit import CommandIO

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


def fail(field: str, message: str) -> dict[str, object]:
    return {"status": "fail", "data": {field: message}}


async def test_exec_returns_buffered_result(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox(envs={"GREETING": "hello"})
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec",
        json={
            "cmd": "/bin/bash",
            "args": ["-lc", 'echo "$GREETING $WHO"; cat; echo oops >&2; exit 3'],
            "stdin": "piped\n",
            "env": {"GREETING": "hi"},
            "cwd": "/tmp",
        },
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["result"] == {
        "exit_code": 3,
        "stdout": "hi \npiped\n",
        "stderr": "oops\n",
        "error": "",
    }
    assert data["exec_ms"] == 0.0


async def test_exec_sees_declared_envs_and_cwd(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox(envs={"TOKEN": "s3"})
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec",
        json={"cmd": "bash", "args": ["-c", "echo $TOKEN; pwd"], "cwd": "/tmp"},
    )
    assert response.json()["data"]["result"]["stdout"] == "s3\n/tmp\n"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "cmd", "is required"),
        ({"cmd": ""}, "cmd", "is required"),
        ({"cmd": ["ls"]}, "cmd", "must be a string"),
        ({"cmd": "ls", "args": "-l"}, "args", "must be a list of strings"),
        ({"cmd": "ls", "args": [1]}, "args", "must be a list of strings"),
        ({"cmd": "ls", "stdin": 5}, "stdin", "must be a string"),
        (
            {"cmd": "ls", "env": {"UNDECLARED": "x"}},
            "env",
            "only env keys declared at sandbox creation may be set",
        ),
        ({"cmd": "ls", "env": {"DECLARED": 1}}, "env", "must be an object of string values"),
        ({"cmd": "ls", "cwd": "relative"}, "cwd", "must be an absolute path"),
        ({"cmd": "ls", "cwd": "/nowhere"}, "cwd", "directory does not exist"),
        ({"cmd": "ls", "stream": "yes"}, "stream", "must be a boolean"),
    ],
)
async def test_exec_rejects_bad_bodies(
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    body: dict[str, object],
    field: str,
    message: str,
) -> None:
    sandbox_id = await make_sandbox(envs={"DECLARED": "x"})
    response = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body)
    assert (response.status_code, response.json()) == (400, fail(field, message))


async def test_exec_of_unknown_command_exits_127_with_the_result_s_error(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    """TS ``ExecResult.error``: "Agent-level failure (the command could not be started)"."""
    sandbox_id = await make_sandbox()
    response = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "no-such-tool"})
    assert response.json()["data"]["result"] == {
        "exit_code": 127,
        "stdout": "",
        "stderr": "",
        "error": 'exec: "no-such-tool": executable file not found in $PATH',
    }


async def test_exec_stream_sends_one_key_per_frame_with_heartbeats(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec?stream=true",
        json={"cmd": "bash", "args": ["-c", "echo one; sleep 11; echo two >&2; exit 4"]},
    )
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    frames = [json.loads(line) for line in response.text.splitlines()]
    assert frames == [
        {"stdout": "one\n"},
        {"hb": True},
        {"hb": True},
        {"stderr": "two\n"},
        {"exit_code": 4},
    ]


async def test_exec_stream_by_body_flag(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "echo", "args": ["x"], "stream": True}
    )
    assert [json.loads(line) for line in response.text.splitlines()] == [
        {"stdout": "x\n"},
        {"exit_code": 0},
    ]
    # Streamed either way, so journaled (and matched by faults) as ``exec_stream`` either way.
    assert fake.journal.operations()[-1] == "exec_stream"


async def test_exec_stream_is_journaled_as_exec_stream(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    await client.post(f"/v1/sandboxes/{sandbox_id}/exec?stream=true", json={"cmd": "true"})
    assert fake.journal.operations()[-1] == "exec_stream"


async def test_registered_command_runs_in_exec(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    async def node(io: CommandIO) -> int:
        data = await io.read_stdin()
        await io.write_stdout(b"node " + " ".join(io.argv[1:]).encode() + b" " + data)
        return 0

    fake.commands.register("node", node)
    sandbox_id = await make_sandbox()
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec",
        json={"cmd": "node", "args": ["-v"], "stdin": "in"},
    )
    assert response.json()["data"]["result"]["stdout"] == "node -v in"


# -- files -----------------------------------------------------------------------------------


async def test_upload_and_download_binary_round_trip(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    payload = os.urandom(300_000) + bytes(range(256))
    path = "/work space/new dir/data ü.bin"
    upload = await client.put(
        f"/v1/sandboxes/{sandbox_id}/files",
        params={"path": path},
        content=payload,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert upload.status_code == 200
    assert upload.json() == {"status": "success", "data": {"path": path, "bytes": len(payload)}}
    download = await client.get(f"/v1/sandboxes/{sandbox_id}/files", params={"path": path})
    assert download.status_code == 200
    assert download.headers["Content-Type"] == "application/octet-stream"
    assert download.content == payload
    assert fake.sandbox(sandbox_id).disk.read_file(path) == payload


async def test_percent_encoded_path_is_decoded(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    url = f"/v1/sandboxes/{sandbox_id}/files?path=%2Fpaperclip-workspace%2F.marker%20file"
    assert (await client.put(url, content=b"m")).status_code == 200
    assert fake.sandbox(sandbox_id).disk.read_file("/paperclip-workspace/.marker file") == b"m"


async def test_exec_sees_uploaded_file(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    await client.put(
        f"/v1/sandboxes/{sandbox_id}/files", params={"path": "/tmp/a.txt"}, content=b"abc"
    )
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "/bin/cat", "args": ["/tmp/a.txt"]}
    )
    assert response.json()["data"]["result"]["stdout"] == "abc"


@pytest.mark.parametrize(
    ("method", "path", "status", "body"),
    [
        (
            "GET",
            "/missing.txt",
            404,
            {"status": "fail", "data": {"code": "file_not_found", "message": "file not found"}},
        ),
        ("GET", "relative.txt", 400, fail("path", "must be an absolute path")),
        ("PUT", "relative.txt", 400, fail("path", "must be an absolute path")),
        ("GET", "", 400, fail("path", "is required")),
        ("GET", "/tmp", 400, fail("path", "is a directory")),
        ("PUT", "/tmp", 400, fail("path", "is a directory")),
        ("PUT", "/etc/os-release/child", 400, fail("path", "a parent is not a directory")),
    ],
)
async def test_file_errors(
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    method: str,
    path: str,
    status: int,
    body: dict[str, object],
) -> None:
    sandbox_id = await make_sandbox()
    response = await client.request(
        method, f"/v1/sandboxes/{sandbox_id}/files", params={"path": path}, content=b"x"
    )
    assert (response.status_code, response.json()) == (status, body)


async def test_files_survive_pause_and_resume(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}"
    await client.put(base + "/files", params={"path": "/keep/me"}, content=b"kept")
    await client.post(base + "/pause")
    await client.get(base)
    await client.post(base + "/resume")
    await client.get(base)
    assert (await client.get(base + "/files", params={"path": "/keep/me"})).content == b"kept"
