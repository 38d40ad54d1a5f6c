"""Real programs on the process runtime without a shared sandbox network (not root).

Forced by replacing the one probe (``netmode.detect``), since the machine runs as root. Each
sandbox has a loopback-only network of its own: managed processes, pause, fork and destroy
work as in the shared mode; a server one process starts is reached by the next exec but not
through the preview URL. Real programs take real time, hence the reliability step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
from fake_server.runtime.process import ProcessMachine
from fake_server.runtime.process.net import netmode
from fake_server.runtime.process.sandbox import tree
from tests._helpers import until
from tests.fake_server._process_runtime import api_sh

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

    from tests._fakes import MakeFake

pytestmark = [pytest.mark.reliability, pytest.mark.asyncio]


@pytest_asyncio.fixture(name="fake")
async def _fake(monkeypatch: pytest.MonkeyPatch, make_fake: MakeFake) -> FakeCreateOS:
    monkeypatch.setattr(netmode, "detect", lambda: netmode.NetworkMode("not root"))
    immediate = TransitionPolicy.immediate()
    return await make_fake(clock=VirtualClock(), transitions=immediate, runtime="process")


async def new_sandbox(client: httpx.AsyncClient, **fields: Any) -> str:
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", **fields})
    assert created.status_code == 200, created.text
    sandbox_id: str = created.json()["data"]["id"]
    return sandbox_id


async def start(client: httpx.AsyncClient, sandbox_id: str, script: str) -> str:
    started = await client.post(
        f"/v1/sandboxes/{sandbox_id}/processes", json={"cmd": "/bin/bash", "args": ["-c", script]}
    )
    assert started.status_code == 201, started.text
    process_id: str = started.json()["data"]["process_id"]
    return process_id


def _state(pid: int) -> str | None:
    """The process's state letter; ``None`` once it is gone (``touch`` may still be exiting
    when the tree is read, and is not one of the processes pause must stop)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    return data[data.rfind(b")") + 2 :].split()[0].decode()


async def test_processes_pause_fork_and_destroy_work_with_a_network_per_process(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    sandbox_id = await new_sandbox(client)
    base = f"/v1/sandboxes/{sandbox_id}"
    found = fake.sandbox(sandbox_id).machine
    assert isinstance(found, ProcessMachine)
    assert (await api_sh(client, sandbox_id, "echo kept > f"))["exit_code"] == 0
    await start(client, sandbox_id, "sleep 300 & touch up; wait")

    async def up() -> bool:
        # ``touch`` may run before the fake's task, back from starting bwrap, registers the run
        return found.disk.exists("/root/up") and len(found.runs) == 1

    await until(up)
    [nsenter] = [run.pid for run in found.runs.values()]
    pids = [p for level in tree.descendants(nsenter) for p in level]

    async def states(wanted: Callable[[set[str]], bool]) -> bool:
        return wanted({state for pid in pids if (state := _state(pid)) is not None})

    assert (await client.post(f"{base}/pause")).status_code == 200
    await until(lambda: states(lambda seen: seen == {"T"}))
    forked = await client.post(f"{base}/fork", json={})
    assert forked.status_code == 200, forked.text
    child = fake.sandbox(forked.json()["data"]["id"]).machine
    assert child.disk.read_file("/root/f") == b"kept\n"
    assert (await client.post(f"{base}/resume")).status_code == 200
    await until(lambda: states(lambda seen: "T" not in seen))

    assert (await client.delete(base)).status_code == 200
    assert not found.directory.exists()

    async def gone() -> bool:  # killed at once; the kernel reaps them (and their mounts) after
        return tree.descendants(nsenter) == []

    await until(gone)


async def test_a_server_is_reached_by_the_next_exec_but_not_by_the_preview_url(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    sandbox_id = await new_sandbox(client, ingress_enabled=True)
    server = (
        b"from http.server import BaseHTTPRequestHandler, HTTPServer\nimport pathlib\n"
        b"server = HTTPServer(('127.0.0.1', 8080), BaseHTTPRequestHandler)\n"
        b"pathlib.Path('up').touch()\nserver.serve_forever()\n"
    )
    put = await client.put(
        f"/v1/sandboxes/{sandbox_id}/files",
        params={"path": "/root/server.py"},
        content=server,
    )
    assert put.status_code in (200, 201), put.text
    await start(client, sandbox_id, "exec python3 server.py")
    own = await api_sh(
        client, sandbox_id, "until [ -e up ]; do sleep 0.01; done; echo > /dev/tcp/127.0.0.1/8080"
    )
    assert own["exit_code"] == 0
    preview = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/")
    assert preview.status_code == 502
    assert preview.json()["message"].startswith("preview URLs to servers in the sandbox need")
