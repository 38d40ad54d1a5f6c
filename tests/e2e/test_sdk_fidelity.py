"""Behaviours the service's own clients record and the fake once answered otherwise (issue 30),
each through the official Python SDK or raw HTTP framed as the client that relies on it sends
it; each test names its source."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest
from createos import APIError, Client
from createos.models import (
    CreateSandboxRequest,
    NetworkCreateRequest,
    NetworkEntry,
    RunCommandRequest,
)

from tests.e2e.ts_sdk import needs_node, run_ts_script

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS
    from fake_server.models.account import Account

CURL = RunCommandRequest(command="curl", arguments=["-sS", "https://pypi.org/simple/"])
#: Allowed: the name does not resolve (the fake has no internet); blocked: reset (exit 35).
ALLOWED = (6, "curl: (6) Could not resolve host: pypi.org\n")
BLOCKED = (35, "curl: (35) Recv failure: Connection reset by peer\n")


def _error(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    return caught.value


def _curl(sandbox: SandboxInstance) -> tuple[int, str]:
    result = sandbox.run_command(CURL).result
    return result.exit_code, result.standard_error


@pytest.fixture(name="raw")
def _raw(rfake: FakeCreateOS) -> Iterator[httpx.Client]:
    """Plain HTTP with the account's key, as langflow's and the CLI's clients send it."""
    with httpx.Client(base_url=rfake.url, headers={"X-Api-Key": rfake.api_key}) as client:
        yield client


def test_egress_null_or_omitted_allows_everything(
    running: Callable[..., SandboxInstance], raw: httpx.Client
) -> None:
    """TS ``SetEgressRequest`` ("``null``, omitted, or ``[]`` means allow all"), TS
    how-to/lifecycle.md (``setEgress(null)``), langflow-sandbox-createos 0.2.0 ("null, [], and
    ["*"] all mean allow-all", measured); the Python SDK sends ``{"egress": rules}`` as given."""
    sandbox = running()
    lock = ["203.0.113.0/24:443"]
    assert sandbox.set_egress(lock).egress_rules == lock
    assert _curl(sandbox) == BLOCKED
    assert sandbox.set_egress(None).egress_rules == []  # type: ignore[arg-type]
    assert sandbox.egress().egress_rules == []
    assert _curl(sandbox) == ALLOWED
    sandbox.set_egress(lock)
    omitted = raw.put(f"/v1/sandboxes/{sandbox.id}/egress", json={})
    assert (omitted.status_code, omitted.json()["data"]) == (200, {"id": sandbox.id, "egress": []})
    assert _curl(sandbox) == ALLOWED
    wrong = raw.put(f"/v1/sandboxes/{sandbox.id}/egress", json={"egress": "all"})
    assert (wrong.status_code, wrong.json()) == (
        400,
        {"status": "fail", "data": {"egress": "must be a list of strings"}},
    )


@pytest.mark.parametrize("seconds", [0, 59, 86401])
def test_create_refuses_auto_pause_outside_60_to_86400(
    sdk: Client, raw: httpx.Client, seconds: int
) -> None:
    """COMPATIBILITY.md "Idle auto-pause" (accepted on create and patch, "Valid range
    60–86400, server-validated"), TS example 40 ("the server rejects anything outside it").
    The Python SDK leaves out a 0, so 0 goes as the TS SDK sends any number."""
    body = {"shape": "s-1vcpu-1gb", "auto_pause_after_seconds": seconds}
    if seconds:
        refused = _error(lambda: sdk.create_sandbox(CreateSandboxRequest(**body)))  # type: ignore[arg-type]
        assert str(refused) == (
            "POST /v1/sandboxes: HTTP 400: "
            "auto_pause_after_seconds: must be between 60 and 86400 seconds"
        )
    reply = raw.post("/v1/sandboxes", json=body)
    assert (reply.status_code, reply.json()) == (
        400,
        {
            "status": "fail",
            "data": {"auto_pause_after_seconds": "must be between 60 and 86400 seconds"},
        },
    )
    assert sdk.list_sandboxes() == []


def test_create_takes_auto_pause_at_the_bounds(sdk: Client) -> None:
    """The same range's ends are accepted and echoed (TS example 40 creates with 300)."""
    for seconds in (60, 86400):
        request = CreateSandboxRequest(shape="s-1vcpu-1gb", auto_pause_after_seconds=seconds)
        assert sdk.create_sandbox(request).refresh().data.auto_pause_after_seconds == seconds


def test_create_refuses_a_bandwidth_quota(sdk: Client, raw: httpx.Client) -> None:
    """COMPATIBILITY.md 0.6.0: "``bandwidth_quota_bytes`` is not settable at create. The
    server rejects any non-zero value with ``400`` and stamps the cluster default" (the TS SDK
    removed the field from ``CreateSandboxRequest``; a JS caller can still pass it)."""
    body = {"shape": "s-1vcpu-1gb", "bandwidth_quota_bytes": 1024}
    reply = raw.post("/v1/sandboxes", json=body)
    assert (reply.status_code, reply.json()) == (
        400,
        {
            "status": "fail",
            "data": {
                "bandwidth_quota_bytes": "cannot be set at create; recharge the quota after create"
            },
        },
    )
    assert sdk.list_sandboxes() == []
    zero = raw.post("/v1/sandboxes", json={**body, "bandwidth_quota_bytes": 0})
    assert zero.json()["data"]["bandwidth_quota_bytes"] == 10 * 1024**3


@pytest.mark.parametrize("path", ["sandboxes", "networks", "disks", "templates", "shapes", "hosts"])
def test_lists_clamp_limit_to_500(raw: httpx.Client, path: str) -> None:
    """COMPATIBILITY.md 0.6.0: "The server clamps ``limit`` to **500**"; TS ``http.ts``
    pages by the count it got ("a larger request silently returns fewer rows")."""
    reply = raw.get(f"/v1/{path}", params={"limit": 1000})
    assert reply.status_code == 200
    assert reply.json()["data"]["pagination"]["limit"] == 500
    zero = raw.get(f"/v1/{path}", params={"limit": 0})
    assert (zero.status_code, zero.json()) == (
        400,
        {"status": "fail", "data": {"limit": "must be at least 1"}},
    )


def test_a_clamped_page_holds_500_and_the_next_page_the_rest(
    sdk: Client, rfake: FakeCreateOS, account: Account, raw: httpx.Client
) -> None:
    """The TS SDK's paging advances "by the actual item count, not the requested size"
    (COMPATIBILITY.md 0.6.0); the Python SDK's ``list`` asks 500 a page. The 502 disks are
    registered on the model (502 requests would cost the suite a second)."""
    rfake.world.ctx.resources.max_disks = 502  # the module's fake: reset restores 20
    config = {"bucket": "b", "endpoint": "https://s3.example.test"}
    credentials = {"access_key": "a", "secret_key": "s"}
    for index in range(502):
        body = {"name": f"d{index}", "config": config, "credentials": credentials}
        account.resources.disks.create(body)
    first = raw.get("/v1/disks", params={"limit": 1000}).json()["data"]
    assert first["pagination"] == {"total": 502, "limit": 500, "offset": 0, "count": 500}
    rest = raw.get("/v1/disks", params={"limit": 1000, "offset": 500}).json()["data"]
    assert [d["name"] for d in rest["data"]] == ["d500", "d501"]
    assert len(sdk.disks.list()) == 502


def test_networks_are_found_by_id_or_name(
    sdk: Client, running: Callable[..., SandboxInstance], raw: httpx.Client
) -> None:
    """The CLI's ``internal/api/sandbox.go``: ``GetNetwork`` and ``DeleteNetwork`` take "id
    OR friendly name" in the path, ``AttachNetwork`` sends it as ``{"id": ref}``, ``DetachNetwork``
    puts it in the path; ``sandbox create --network NAME`` (``cmd/sandbox/network.go``)."""
    network = sdk.networks.create(NetworkCreateRequest(name="mesh"))
    assert sdk.networks.get("mesh").id == network.id
    first = running(networks=[NetworkEntry(id="mesh")])
    second = running()
    second.attach_network("mesh")
    members = {m.sandbox_id for m in sdk.networks.get("mesh").members}
    assert members == {first.id, second.id}
    in_use = raw.delete("/v1/networks/mesh")
    assert (in_use.status_code, in_use.json()["data"]["code"]) == (409, "network_in_use")
    first.detach_network("mesh")
    detached = raw.delete(f"/v1/sandboxes/{second.id}/networks/mesh")
    assert detached.status_code == 200
    assert sdk.networks.get(network.id).members == []
    sdk.networks.delete("mesh")
    missing = _error(lambda: sdk.networks.get("mesh"))
    assert str(missing) == (
        "GET /v1/networks/mesh: HTTP 404: code: network_not_found; message: network not found"
    )


def test_a_live_sandbox_name_is_not_given_twice(sdk: Client, raw: httpx.Client) -> None:
    """langflow-sandbox-createos 0.2.0 ``_client.find_by_name`` (measured: "The control plane
    refuses duplicate names among non-terminal sandboxes"); the CLI's ``resolve.go`` says the
    API does not enforce it, and the measurement wins (docs/fidelity.md). A destroyed
    sandbox's name is free again."""
    body: dict[str, Any] = {"shape": "s-1vcpu-1gb", "name": "worker-1"}
    first = sdk.create_sandbox(CreateSandboxRequest(**body))
    duplicate = raw.post("/v1/sandboxes", json=body)
    assert (duplicate.status_code, duplicate.json()) == (
        409,
        {
            "status": "fail",
            "data": {
                "code": "sandbox_name_taken",
                "message": "a live sandbox already has this name",
            },
        },
    )
    first.pause().wait_until_paused()
    refused = _error(lambda: sdk.create_sandbox(CreateSandboxRequest(**body)))
    assert str(refused) == (
        "POST /v1/sandboxes: HTTP 409: "
        "code: sandbox_name_taken; message: a live sandbox already has this name"
    )
    assert [s.id for s in sdk.list_sandboxes()] == [first.id]
    first.destroy()
    again = sdk.create_sandbox(CreateSandboxRequest(**body))
    assert (again.name, again.id != first.id) == ("worker-1", True)


@needs_node
def test_the_typescript_sdk_sees_what_the_service_answers() -> None:
    """``sdk_ts_fidelity.mjs``: the same behaviours through the TS SDK 0.7.1 (egress ``null``,
    create validation, ``result.error``, duplicate names, networks by name, the 500 clamp);
    each block names its source."""
    assert run_ts_script("sdk_ts_fidelity.mjs") == [
        "egress-null",
        "create-validation",
        "result-error",
        "duplicate-name",
        "network-by-name",
        "list-clamp",
    ]
