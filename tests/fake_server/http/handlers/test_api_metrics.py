"""Metrics: a sandbox's CPU and memory (measured on the process runtime, modelled on bashkit),
an account's usage over a window on fake time, and windows refused with the field named."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

from fake_server import TransitionPolicy, VirtualClock
from tests._fakes import api_client

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import httpx

    from fake_server import FakeCreateOS
    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]
MIB = 1 << 20


async def test_bashkit_sandbox_metrics_follow_the_documented_model(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox(shape="s-2vcpu-4gb")
    base = f"/v1/sandboxes/{sandbox_id}"
    idle = await client.get(base + "/metrics")
    assert idle.json() == {
        "status": "success",
        "data": {
            "sandbox_id": sandbox_id,
            "status": "running",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cpu": {"vcpu": 2, "usage_seconds": 0.0},
            "memory": {"limit_bytes": 4096 * MIB, "used_bytes": 32 * MIB, "used_pct": 0.78},
            "processes": 0,
            "source": "model",
        },
    }
    started = await client.post(base + "/processes", json={"cmd": "sleep", "args": ["300"]})
    assert started.status_code == 201
    busy = (await client.get(base + "/metrics")).json()["data"]
    assert (busy["processes"], busy["memory"]["used_bytes"]) == (1, 36 * MIB)
    assert (await client.delete(base)).status_code == 200


async def test_metrics_of_another_accounts_sandbox_are_404(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    other = fake.add_account()
    response = await client.get(f"/v1/sandboxes/{sandbox_id}/metrics", headers={"X-Api-Key": other})
    assert (response.status_code, response.json()["data"]["code"]) == (404, "sandbox_not_found")
    assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200


async def test_account_usage_counts_running_time_on_the_fake_clock(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    clock: VirtualClock = fake.clock  # type: ignore[assignment]
    start = clock.time()
    first = await make_sandbox(shape="s-2vcpu-4gb")
    clock.advance(100)
    await make_sandbox()
    clock.advance(50)
    assert (await client.post(f"/v1/sandboxes/{first}/pause")).status_code == 200
    await client.get(f"/v1/sandboxes/{first}")  # settles the pause
    clock.advance(50)
    usage = (await client.get("/v1/metrics", params={"from": str(start)})).json()["data"]
    # first: 150 s running at 2 vCPU / 4096 MiB; second: 100 s at 1 vCPU / 1024 MiB.
    assert {k: usage[k] for k in ("sandboxes", "running_seconds", "vcpu_seconds")} == {
        "sandboxes": 2,
        "running_seconds": 250.0,
        "vcpu_seconds": 400.0,
    }
    assert usage["mem_mib_seconds"] == 150 * 4096 + 100 * 1024
    assert usage["now"] == {"running": 1, "paused": 1, "total": 2}
    assert (usage["from"], usage["to"]) == ("2026-01-01T00:00:00.000Z", "2026-01-01T00:03:20.000Z")
    series = await client.get("/v1/metrics/timeseries", params={"from": str(start), "step": "100"})
    points = series.json()["data"]["points"]
    assert [p["running_seconds"] for p in points] == [100.0, 150.0]
    assert [p["from"] for p in points] == ["2026-01-01T00:00:00.000Z", "2026-01-01T00:01:40.000Z"]
    for sandbox in fake.sandboxes():
        assert (await client.delete(f"/v1/sandboxes/{sandbox.id}")).status_code == 200


@pytest.mark.parametrize(
    ("path", "query", "field", "message"),
    [
        ("/v1/metrics", {"from": "100", "to": "100"}, "from", "must be before 'to'"),
        ("/v1/metrics", {"from": "200", "to": "100"}, "from", "must be before 'to'"),
        ("/v1/metrics", {"from": "0"}, "from", "window wider than 2678400 seconds"),
        ("/v1/metrics", {"to": "soon"}, "to", "must be unix seconds or an RFC 3339 time"),
        ("/v1/metrics", {"from": "-5"}, "from", "must be unix seconds or an RFC 3339 time"),
        ("/v1/metrics/timeseries", {"step": "1"}, "step", "gives more than 1440 points; widen it"),
        ("/v1/metrics/timeseries", {"step": "0.5"}, "step", "must be at least 1 second"),
        ("/v1/metrics/timeseries", {"step": "x"}, "step", "must be a number of seconds"),
        ("/v1/metrics/timeseries", {"step": "nan"}, "step", "must be at least 1 second"),
    ],
)
async def test_bad_windows_are_400_naming_the_field(
    client: httpx.AsyncClient, path: str, query: dict[str, str], field: str, message: str
) -> None:
    response = await client.get(path, params=query)
    assert (response.status_code, response.json()) == (
        400,
        {"status": "fail", "data": {field: message}},
    )


async def test_rfc3339_windows_are_accepted(client: httpx.AsyncClient) -> None:
    query = {"from": "2025-12-31T23:00:00Z", "to": "2026-01-01T00:00:00Z", "step": "1800"}
    response = await client.get("/v1/metrics/timeseries", params=query)
    assert [p["from"] for p in response.json()["data"]["points"]] == [
        "2025-12-31T23:00:00.000Z",
        "2025-12-31T23:30:00.000Z",
    ]


async def test_process_runtime_metrics_are_measured_from_proc(make_fake: MakeFake) -> None:
    script = (
        "import sys, time\n"
        "held = bytearray(64 << 20)\n"
        "end = time.process_time() + 0.3\n"
        "while time.process_time() < end: pass\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    async with _process_sandbox(make_fake) as (client, base):
        started = await client.post(
            base + "/processes", json={"cmd": "python3", "args": ["-c", script]}
        )
        process_id = started.json()["data"]["process_id"]
        data = await _metrics_once(client, base, lambda d: d["cpu"]["usage_seconds"] >= 0.3)
        assert data["source"] == "proc"
        assert data["memory"]["used_bytes"] >= 64 * MIB
        assert data["processes"] >= 2  # bwrap, the sandbox's init, python
        assert (await client.delete(f"{base}/processes/{process_id}")).status_code == 200
        assert (await client.delete(base)).status_code == 200


@contextlib.asynccontextmanager
async def _process_sandbox(make_fake: MakeFake) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A client of a process-runtime fake (on its clock) and the path of a new sandbox."""
    fake = await make_fake(
        clock=VirtualClock(), transitions=TransitionPolicy.immediate(), runtime="process"
    )
    async with api_client(fake) as client:
        created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        yield client, f"/v1/sandboxes/{created.json()['data']['id']}"


async def _metrics_once(
    client: httpx.AsyncClient, base: str, ready: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The metrics once ``ready`` holds: a real program decides when (bounded)."""
    for _ in range(2000):
        data: dict[str, Any] = (await client.get(base + "/metrics")).json()["data"]
        if ready(data):
            return data
        await asyncio.sleep(0.01)
    raise AssertionError("the program never got there")


async def test_process_runtime_metrics_count_a_daemon_an_exec_left_running(
    make_fake: MakeFake,
) -> None:
    """A daemon (``nohup setsid … &``) holding memory and burning a CPU counts: the metrics
    read the sandbox's cgroups, not only the trees of the API's own processes (they read 0
    for it before)."""
    daemon = (
        "nohup setsid python3 -c 'import time\n"
        "held = bytearray(128 << 20)\n"
        'held[::4096] = b"x" * len(held[::4096])\n'
        "end = time.process_time() + 0.3\n"
        "while time.process_time() < end: pass\n"
        "time.sleep(300)' >/dev/null 2>&1 &"
    )
    async with _process_sandbox(make_fake) as (client, base):
        ran = await client.post(base + "/exec", json={"cmd": "bash", "args": ["-c", daemon]})
        assert ran.json()["data"]["result"]["exit_code"] == 0
        data = await _metrics_once(
            client,
            base,
            lambda d: d["cpu"]["usage_seconds"] >= 0.3 and d["memory"]["used_bytes"] >= 128 * MIB,
        )
        assert data["processes"] >= 2  # the sandbox's init and the daemon
        assert (await client.delete(base)).status_code == 200
