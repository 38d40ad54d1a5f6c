"""How process output is cut into ``/connect`` frames (the live throughput depends on it)."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS
    from fake_server.runtime.bashkit import CommandIO

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]
CHUNK = 64 * 1024


async def _spew(io: CommandIO) -> int:
    await io.write_stderr(b"starting\n")
    for i in range(4):
        await io.write_stdout(bytes([65 + i]) * CHUNK)
    await io.clock.sleep(5)
    await io.write_stdout(b"after the sleep\n")
    io.stderr_buffer += b"buffered\n"
    return 0


async def _run(client: httpx.AsyncClient, sandbox: str, body: dict[str, Any]) -> list[Any]:
    created = await client.post(f"/v1/sandboxes/{sandbox}/processes", json=body)
    base = f"/v1/sandboxes/{sandbox}/processes/{created.json()['data']['process_id']}"
    await client.post(base + "/stdin/close")
    await client.get(base + "/wait")
    return [json.loads(line) for line in (await client.get(base + "/connect")).text.splitlines()]


async def test_a_registered_command_as_the_process_writes_whole_frames(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    fake.commands.register("spew", _spew)
    frames = await _run(client, await make_sandbox(), {"cmd": "spew"})
    shown = [(f["stream"], base64.b64decode(f["data_base64"])) for f in frames[:-1]]
    assert shown == [
        ("stderr", b"starting\n"),
        ("stdout", b"A" * CHUNK),
        ("stdout", b"B" * CHUNK),
        ("stdout", b"C" * CHUNK),
        ("stdout", b"D" * CHUNK),
        ("stdout", b"after the sleep\n"),
        ("stderr", b"buffered\n"),
    ]
    assert frames[-1] == {"type": "exit", "exit_code": 0}


async def test_redirected_output_of_a_registered_command_still_goes_where_bash_says(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    fake.commands.register("spew", _spew)
    script = "echo before; spew > /tmp/out 2>/dev/null; wc -c < /tmp/out; echo after"
    frames = await _run(client, await make_sandbox(), {"cmd": "bash", "args": ["-c", script]})
    stdout = b"".join(base64.b64decode(f["data_base64"]) for f in frames[:-1])
    assert stdout == b"before\n%d\nafter\n" % (4 * CHUNK + 16)


async def test_bulk_bash_output_is_gathered_into_64_kib_frames(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox = await make_sandbox()
    payload = bytes(range(256)) * 1024  # 256 KiB: bashkit hands it over in 4 KiB pieces
    await client.put(f"/v1/sandboxes/{sandbox}/files", params={"path": "/f"}, content=payload)
    frames = await _run(client, sandbox, {"cmd": "bash", "args": ["-c", "cat /f; echo end"]})
    data = [base64.b64decode(f["data_base64"]) for f in frames[:-1]]
    assert [len(d) for d in data] == [CHUNK] * 4 + [4]
    assert b"".join(data) == payload + b"end\n"


async def test_bulk_output_before_a_sleep_arrives_before_the_sleep_ends(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox = await make_sandbox()
    await client.put(
        f"/v1/sandboxes/{sandbox}/files", params={"path": "/f"}, content=b"q" * (100 * 1024)
    )
    body = {"cmd": "bash", "args": ["-c", "cat /f; sleep 30; echo late"]}
    created = await client.post(f"/v1/sandboxes/{sandbox}/processes", json=body)
    base = f"/v1/sandboxes/{sandbox}/processes/{created.json()['data']['process_id']}"
    await client.post(base + "/stdin/close")
    start = fake.clock.now()
    received = 0
    async with client.stream("GET", base + "/connect") as stream:
        async for line in stream.aiter_lines():
            frame = json.loads(line)
            if frame["type"] != "data":
                continue
            chunk = base64.b64decode(frame["data_base64"])
            if chunk == b"late\n":
                break
            received += len(chunk)
            assert fake.clock.now() - start < 30
    assert received == 100 * 1024
