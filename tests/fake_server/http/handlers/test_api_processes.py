"""Managed processes over HTTP: create, connect/replay, eviction, input, signals, wait, kill."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, tls_context

if TYPE_CHECKING:
    from fake_server.runtime.bashkit import CommandIO
    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


def frames(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def data(seq: int, text: str, stream: str = "stdout") -> dict[str, Any]:
    encoded = base64.b64encode(text.encode()).decode()
    return {"type": "data", "seq": seq, "stream": stream, "data_base64": encoded}


@pytest_asyncio.fixture(name="sandbox")
async def _sandbox(make_sandbox: MakeSandbox) -> str:
    return await make_sandbox(envs={"DECLARED": "d"})


@pytest.fixture(name="start")
def _start(client: httpx.AsyncClient, sandbox: str) -> Callable[..., Awaitable[str]]:
    """Start ``bash -c script`` with stdin closed; returns the process id."""

    async def start(script: str, **fields: Any) -> str:
        body = {"cmd": "/bin/bash", "args": ["-c", script], **fields}
        response = await client.post(f"/v1/sandboxes/{sandbox}/processes", json=body)
        assert response.status_code == 201, response.text
        process_id: str = response.json()["data"]["process_id"]
        if "pty" not in fields:
            await client.post(f"/v1/sandboxes/{sandbox}/processes/{process_id}/stdin/close")
        return process_id

    return start


Start = Callable[..., Awaitable[str]]


async def test_create_returns_the_full_resource(client: httpx.AsyncClient, sandbox: str) -> None:
    response = await client.post(
        f"/v1/sandboxes/{sandbox}/processes",
        json={"cmd": "/bin/bash", "args": ["-lc", "echo hi"], "cwd": "/tmp"},
    )
    assert response.status_code == 201
    process = response.json()["data"]
    assert process["process_id"].startswith("proc-")
    assert len(process["process_id"]) == 31
    assert {
        k: process[k]
        for k in (
            "kind",
            "state",
            "leader_exited",
            "tree_exited",
            "exit_code",
            "signal",
            "cmd",
            "args",
            "cwd",
            "finished_at",
        )
    } == {
        "kind": "process",
        "state": "starting",
        "leader_exited": False,
        "tree_exited": False,
        "exit_code": None,
        "signal": None,
        "cmd": "/bin/bash",
        "args": ["-lc", "echo hi"],
        "cwd": "/tmp",
        "finished_at": None,
    }
    assert isinstance(process["pid"], int)
    assert process["pid"] > 100
    assert process["output"] == {"oldest_seq": 1, "newest_seq": 0, "bytes": 0}
    listed = (await client.get(f"/v1/sandboxes/{sandbox}/processes")).json()["data"]
    assert [p["process_id"] for p in listed["processes"]] == [process["process_id"]]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "cmd", "is required"),
        (
            {"cmd": "ls", "env": {"NOPE": "1"}},
            "env",
            "only env keys declared at sandbox creation may be set",
        ),
        ({"cmd": "ls", "cwd": "/missing"}, "cwd", "directory does not exist"),
        ({"cmd": "ls", "pty": "big"}, "pty", "must be an object with rows and cols"),
    ],
)
async def test_create_rejects_bad_bodies(
    client: httpx.AsyncClient, sandbox: str, body: dict[str, Any], field: str, message: str
) -> None:
    response = await client.post(f"/v1/sandboxes/{sandbox}/processes", json=body)
    assert (response.status_code, response.json()) == (
        400,
        {"status": "fail", "data": {field: message}},
    )


async def test_connect_replays_then_exits(
    client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    process_id = await start("echo a; sleep 1; echo b >&2; sleep 1; echo c; exit 7")
    base = f"/v1/sandboxes/{sandbox}/processes/{process_id}"
    await client.get(base + "/wait")
    everything = await client.get(base + "/connect", params={"after": 0})
    assert everything.headers["Content-Type"] == "application/x-ndjson"
    assert frames(everything.text) == [
        data(1, "a\n"),
        data(2, "b\n", "stderr"),
        data(3, "c\n"),
        {"type": "exit", "exit_code": 7},
    ]
    tail = await client.get(base + "/connect", params={"after": 2})
    assert frames(tail.text) == [data(3, "c\n"), {"type": "exit", "exit_code": 7}]
    done = await client.get(base + "/connect", params={"after": 3})
    assert frames(done.text) == [{"type": "exit", "exit_code": 7}]
    ahead = await client.get(base + "/connect", params={"after": 4})
    assert (ahead.status_code, ahead.json()) == (
        400,
        {"status": "fail", "data": {"after": "is beyond the newest output"}},
    )


async def test_connect_streams_live_frames_with_heartbeats(
    client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    process_id = await start("echo start; sleep 12; echo end")
    response = await client.get(f"/v1/sandboxes/{sandbox}/processes/{process_id}/connect")
    assert frames(response.text) == [
        data(1, "start\n"),
        {"type": "heartbeat"},
        {"type": "heartbeat"},
        data(2, "end\n"),
        {"type": "exit", "exit_code": 0},
    ]


async def test_big_output_is_chunked_and_old_output_evicted(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    async def spew(io: CommandIO) -> int:
        for _ in range(5):
            await io.write_stdout(b"x" * 300_000)
        return 0

    fake.commands.register("spew", spew)
    process_id = await start("spew")
    base = f"/v1/sandboxes/{sandbox}/processes/{process_id}"
    finished = (await client.get(base + "/wait")).json()["data"]
    output = finished["output"]
    # 1.5 MB in frames of at most 64 KiB: at least 23, however the writes were coalesced.
    assert output["newest_seq"] >= 23
    assert output["bytes"] <= 1024 * 1024
    assert output["oldest_seq"] > 1
    gone = await client.get(base + "/connect", params={"after": 0})
    assert (gone.status_code, gone.json()) == (
        410,
        {
            "status": "fail",
            "data": {"code": "output_offset_expired", "message": "requested output was evicted"},
        },
    )
    oldest = output["oldest_seq"]
    kept = frames((await client.get(base + "/connect", params={"after": oldest - 1})).text)
    assert kept[0]["seq"] == oldest
    assert all(len(base64.b64decode(f["data_base64"])) <= 65536 for f in kept[:-1])
    assert sum(len(base64.b64decode(f["data_base64"])) for f in kept[:-1]) == output["bytes"]
    assert kept[-1] == {"type": "exit", "exit_code": 0}


async def test_live_reader_overtaken_by_eviction_gets_error_frame(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    process_id = await start("echo first; sleep 1000")
    process = fake.sandbox(sandbox).processes[process_id]
    url = f"/v1/sandboxes/{sandbox}/processes/{process_id}/connect"
    async with client.stream("GET", url) as response:
        lines = response.aiter_lines()
        assert json.loads(await anext(lines)) == data(1, "first\n")
        process.write_output("stdout", b"second\n")
        process.write_output("stdout", b"third\n")
        process.evict_output(up_to_seq=2)
        assert json.loads(await anext(lines)) == {
            "type": "error",
            "error": "output_offset_expired",
            "oldest_available_seq": 3,
        }
    process.crash()


async def test_stdin_input_and_close(client: httpx.AsyncClient, sandbox: str) -> None:
    created = await client.post(f"/v1/sandboxes/{sandbox}/processes", json={"cmd": "cat"})
    base = f"/v1/sandboxes/{sandbox}/processes/{created.json()['data']['process_id']}"
    for expected, chunk in ((1, b"hello "), (2, b"world")):
        response = await client.post(
            base + "/input", json={"data_base64": base64.b64encode(chunk).decode()}
        )
        assert response.json() == {"status": "success", "data": {"input_seq": expected}}
    closed = await client.post(base + "/stdin/close")
    assert closed.status_code == 200
    again = await client.post(base + "/stdin/close")
    assert (again.status_code, again.json()["data"]["code"]) == (409, "stdin_closed")
    late = await client.post(base + "/input", json={"data_base64": "eA=="})
    assert late.status_code == 409
    await client.get(base + "/wait")
    replay = frames((await client.get(base + "/connect")).text)
    received = b"".join(base64.b64decode(f["data_base64"]) for f in replay if f["type"] == "data")
    assert received == b"hello world"
    assert replay[-1] == {"type": "exit", "exit_code": 0}
    bad = await client.post(base + "/input", json={"data_base64": "***"})
    assert bad.json() == {"status": "fail", "data": {"data_base64": "must be base64"}}


async def test_a_wrapped_script_starts_before_stdin_is_closed(
    client: httpx.AsyncClient, sandbox: str
) -> None:
    """The TypeScript provider's ``exec env … '/bin/bash' '-c' …`` runs while stdin is open."""
    inner = "'echo hi $A; sleep 1; echo bye'"
    script = f"cd -- '/tmp' || exit\nexec env  A='1' '/bin/bash' '-c' {inner}"
    created = await client.post(
        f"/v1/sandboxes/{sandbox}/processes", json={"cmd": "/bin/bash", "args": ["-lc", script]}
    )
    base = f"/v1/sandboxes/{sandbox}/processes/{created.json()['data']['process_id']}"
    waited = await client.get(base + "/wait", params={"timeout_ms": 30000})  # stdin still open
    assert waited.status_code == 200, waited.text
    assert waited.json()["data"]["exit_code"] == 0
    assert frames((await client.get(base + "/connect")).text) == [
        data(1, "hi 1\n"),
        data(2, "bye\n"),
        {"type": "exit", "exit_code": 0},
    ]
    # Closing the pipe after the process exited succeeds (close(2) does); only twice is refused.
    assert (await client.post(base + "/stdin/close")).status_code == 200
    again = await client.post(base + "/stdin/close")
    assert (again.status_code, again.json()["data"]["code"]) == (409, "stdin_closed")


async def test_wait_times_out_with_408_on_the_fake_clock(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    process_id = await start("sleep 100")
    base = f"/v1/sandboxes/{sandbox}/processes/{process_id}"
    before = fake.clock.now()
    response = await client.get(base + "/wait", params={"scope": "tree", "timeout_ms": 30000})
    assert (response.status_code, response.json()) == (
        408,
        {"status": "fail", "data": {"code": "wait_timeout", "message": "process is still running"}},
    )
    assert fake.clock.now() - before == pytest.approx(30.0)
    finished = await client.get(base + "/wait", params={"scope": "leader", "timeout_ms": 600000})
    result = finished.json()["data"]
    assert (result["state"], result["exit_code"], result["tree_exited"]) == ("exited", 0, True)
    assert result["finished_at"] == "2026-01-01T00:01:40.000Z"


async def test_kill_sends_sigterm(client: httpx.AsyncClient, sandbox: str, start: Start) -> None:
    process_id = await start("sleep 100")
    response = await client.delete(f"/v1/sandboxes/{sandbox}/processes/{process_id}?grace_ms=1000")
    killed = response.json()["data"]
    assert (killed["tree_exited"], killed["signal"], killed["exit_code"]) == (True, "SIGTERM", None)
    connect = await client.get(f"/v1/sandboxes/{sandbox}/processes/{process_id}/connect")
    assert frames(connect.text) == [{"type": "exit", "signal": "SIGTERM"}]
    again = await client.delete(f"/v1/sandboxes/{sandbox}/processes/{process_id}")
    assert (again.status_code, again.json()["data"]["signal"]) == (200, "SIGTERM")


async def test_kill_escalates_to_sigkill_after_the_grace(make_fake: MakeFake) -> None:
    clock = VirtualClock()
    fake = await make_fake(clock=clock, transitions=TransitionPolicy.immediate())

    async def stubborn(io: CommandIO) -> int:
        await io.write_stdout(b"ready\n")
        await io.clock.sleep(1000)
        return 0

    fake.commands.register("stubborn", stubborn, ignores_sigterm=True)
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
    ) as c:
        sandbox = (await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()["data"][
            "id"
        ]
        await c.get(f"/v1/sandboxes/{sandbox}")
        created = await c.post(f"/v1/sandboxes/{sandbox}/processes", json={"cmd": "stubborn"})
        base = f"/v1/sandboxes/{sandbox}/processes/{created.json()['data']['process_id']}"
        await c.post(base + "/stdin/close")
        async with c.stream("GET", base + "/connect") as stream:
            # SIGTERM only bounces off once the command is running (it "installed a handler").
            assert json.loads(await anext(stream.aiter_lines())) == data(1, "ready\n")
        before = clock.now()
        killed = (await c.delete(base, params={"grace_ms": 2500})).json()["data"]
        assert clock.now() - before == pytest.approx(2.5)
        assert (killed["tree_exited"], killed["signal"]) == (True, "SIGKILL")
        assert (killed["state"], killed["foreground"]) == ("exited", None)


async def test_signal_ends_the_process(
    client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    process_id = await start("sleep 100")
    base = f"/v1/sandboxes/{sandbox}/processes/{process_id}"
    bad = await client.post(base + "/signal", json={"signal": "SIGBOGUS"})
    assert bad.json() == {"status": "fail", "data": {"signal": "unknown signal"}}
    ignored = await client.post(base + "/signal", json={"signal": "SIGWINCH"})
    assert ignored.json()["data"]["state"] == "running"
    response = await client.post(base + "/signal", json={"signal": "SIGINT"})
    assert (response.json()["data"]["signal"], response.json()["data"]["tree_exited"]) == (
        "SIGINT",
        True,
    )
    late = await client.post(base + "/signal", json={"signal": "SIGTERM"})
    assert (late.status_code, late.json()["data"]["code"]) == (409, "process_exited")


async def test_pty_process_uses_the_pty_stream(
    client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    process_id = await start("echo tty; echo err >&2", pty={"rows": 30, "cols": 120})
    base = f"/v1/sandboxes/{sandbox}/processes/{process_id}"
    assert (await client.get(base)).json()["data"]["kind"] == "pty"
    closing = await client.post(base + "/stdin/close")
    assert (closing.status_code, closing.json()["data"]["code"]) == (409, "pty_stdin")


async def test_unknown_process_is_404(client: httpx.AsyncClient, sandbox: str) -> None:
    response = await client.get(f"/v1/sandboxes/{sandbox}/processes/proc-nope")
    assert (response.status_code, response.json()["data"]["code"]) == (404, "process_not_found")


async def test_destroy_kills_processes_and_wipes_the_disk(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    process_id = await start("sleep 1000")
    process = fake.sandbox(sandbox).processes[process_id]
    disk = fake.sandbox(sandbox).disk
    await client.delete(f"/v1/sandboxes/{sandbox}")
    assert (process.tree_exited, process.signal) == (True, "SIGKILL")
    with pytest.raises(RuntimeError):
        disk.read_file("/etc/os-release")


async def test_processes_keep_running_across_pause(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox: str, start: Start
) -> None:
    process_id = await start("sleep 10; echo after")
    await client.post(f"/v1/sandboxes/{sandbox}/pause")
    await client.get(f"/v1/sandboxes/{sandbox}")
    await client.post(f"/v1/sandboxes/{sandbox}/resume")
    await client.get(f"/v1/sandboxes/{sandbox}")
    base = f"/v1/sandboxes/{sandbox}/processes/{process_id}"
    await client.get(base + "/wait")
    assert frames((await client.get(base + "/connect")).text)[0] == data(1, "after\n")


async def _unused() -> AsyncIterator[None]:  # keeps the AsyncIterator import honest for mypy
    yield
