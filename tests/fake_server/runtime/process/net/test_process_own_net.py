"""The process runtime without a shared sandbox network (not root): a network per sandbox.

The machine runs as root, so these force the reduced mode by injection: ``ProcessRuntime``'s
``network_mode`` parameter, or the one probe (``netmode.detect``) for a whole fake. Processes,
pause, fork and destroy in this mode: ``test_process_own_net_programs.py`` beside this one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from _process_runtime import sh

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
from fake_server.runtime.process import ProcessRuntime
from fake_server.runtime.process.net import netmode

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio

NOT_ROOT = netmode.NetworkMode("not root")
WHY = (
    "need the fake to run as root on the process runtime, where a sandbox's processes share "
    "one network; here each sandbox has a loopback-only network of its own (not root)"
)


@pytest_asyncio.fixture(name="fake")
async def _fake(monkeypatch: pytest.MonkeyPatch, make_fake: MakeFake) -> FakeCreateOS:
    monkeypatch.setattr(netmode, "detect", lambda: NOT_ROOT)
    immediate = TransitionPolicy.immediate()
    return await make_fake(clock=VirtualClock(), transitions=immediate, runtime="process")


async def test_each_sandbox_has_a_network_of_its_own_with_nothing_beyond_loopback(
    tmp_path: Path,
) -> None:
    runtime = ProcessRuntime(base=tmp_path, network_mode=NOT_ROOT)
    try:
        machine = runtime.new_sandbox("sb")
        assert machine.net is None
        script = (
            "readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; "
            "bash -c 'echo > /dev/tcp/1.1.1.1/80' 2>&1 | sed 's/.*: //' | uniq"
        )
        other = runtime.new_sandbox("other")
        (code, first), (_, second) = await sh(machine, script), await sh(machine, script)
        (_, elsewhere) = await sh(other, script)
        assert code == 0
        first_ns, devices, reached = first.splitlines()
        assert (devices, reached) == ("lo", "Network is unreachable")
        assert second.splitlines()[0] == first_ns  # the sandbox's processes share it
        namespaces = {first_ns, elsewhere.splitlines()[0], os.readlink("/proc/self/ns/net")}
        assert len(namespaces) == 3
    finally:
        runtime.close()


async def new_sandbox(client: httpx.AsyncClient, **body: Any) -> str:
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", **body})
    assert created.status_code == 200, created.text
    sandbox_id: str = created.json()["data"]["id"]
    return sandbox_id


async def test_a_preview_url_answers_502_saying_it_needs_root(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    sandbox_id = await new_sandbox(client, ingress_enabled=True)
    answer = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/")
    assert (answer.status_code, answer.json()) == (
        502,
        {
            "status": "error",
            "code": 502,
            "message": f"preview URLs to servers in the sandbox {WHY}",
            "data": {"code": "bad_gateway"},
        },
    )


async def test_egress_rules_are_409_runtime_unsupported_and_change_nothing(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    refusal = {"code": "runtime_unsupported", "message": f"egress rules {WHY}"}
    sandbox_id = await new_sandbox(client)
    egress = f"/v1/sandboxes/{sandbox_id}/egress"
    refused = await client.put(egress, json={"egress": ["pypi.org"]})
    assert (refused.status_code, refused.json()["data"]) == (409, refusal)
    assert (await client.get(egress)).json()["data"]["egress"] == []
    assert (await client.put(egress, json={"egress": []})).status_code == 200
    runtime = fake.runtimes.get("process")
    assert isinstance(runtime, ProcessRuntime)

    at_create = await client.post(
        "/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "egress": ["pypi.org"]}
    )
    assert (at_create.status_code, at_create.json()["data"]) == (409, refusal)
    assert [s.id for s in fake.sandboxes()] == [sandbox_id]
    assert sorted(runtime.machines) == [sandbox_id]

    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    at_fork = await client.post(f"/v1/sandboxes/{sandbox_id}/fork", json={"egress": ["x.org"]})
    assert (at_fork.status_code, at_fork.json()["data"]) == (409, refusal)
    assert [s.id for s in fake.sandboxes()] == [sandbox_id]
    assert sorted(runtime.machines) == [sandbox_id]
    # (no image namespace either: nothing ran, so no disk was made)
    assert sorted(p.name for p in runtime.fake_root.path.iterdir()) == ["lock", sandbox_id]


async def test_account_networks_are_409_runtime_unsupported_and_keep_nothing(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    refusal = {"code": "runtime_unsupported", "message": f"account networks {WHY}"}
    network_id = (await client.post("/v1/networks", json={"name": "n"})).json()["data"]["id"]
    sandbox_id = await new_sandbox(client)
    attached = await client.post(f"/v1/sandboxes/{sandbox_id}/networks", json={"id": network_id})
    assert (attached.status_code, attached.json()["data"]) == (409, refusal)
    at_create = await client.post(
        "/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "networks": [{"id": network_id}]}
    )
    assert (at_create.status_code, at_create.json()["data"]) == (409, refusal)
    assert (await client.get(f"/v1/networks/{network_id}")).json()["data"]["members"] == []
    runtime = fake.runtimes.get("process")
    assert isinstance(runtime, ProcessRuntime)
    assert (sorted(runtime.machines), runtime.hubs) == ([sandbox_id], {})
