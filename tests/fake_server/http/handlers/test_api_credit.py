"""Credit: with none, the seven cost-incurring routes answer 402 and change nothing; the owner
check comes first; the control API, ``FakeCreateOS`` and a fault action set the balance."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server.clock import clock_transport
from fake_server.faults import ExhaustCredit, Fault
from fake_server.faults.spec import action_from_json
from fake_server.operations import named

if TYPE_CHECKING:
    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]

NO_CREDIT = {
    "status": "fail",
    "data": {
        "code": "payment_required",
        "message": "insufficient credit; top up the account to continue",
    },
}

#: The cost-incurring routes that need no sandbox: (method, path, body).
CREATES = [
    ("POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb"}),
    ("POST", "/v1/disks", {"name": "d", "config": {"bucket": "b"}}),
    ("POST", "/v1/networks", {"name": "n"}),
    ("POST", "/v1/templates", {"name": "t", "dockerfile": "FROM devbox:1\nRUN true\n"}),
]


async def paused(client: httpx.AsyncClient, make_sandbox: MakeSandbox) -> str:
    sandbox_id = await make_sandbox()
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    assert (await client.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]["status"] == "paused"
    return sandbox_id


async def test_without_credit_every_cost_route_is_402_and_changes_nothing(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await paused(client, make_sandbox)
    base = f"/v1/sandboxes/{sandbox_id}"
    before = (await client.get(base + "/bandwidth")).json()["data"]
    fake.set_credit(0)
    assert fake.credit() == 0
    for method, path, body in [
        *CREATES,
        ("POST", base + "/resume", None),
        ("POST", base + "/fork", {}),
        ("POST", base + "/bandwidth/recharge", {"add_bytes": 1024}),
    ]:
        response = await client.request(method, path, json=body)
        assert (response.status_code, response.json()) == (402, NO_CREDIT), path
    # The routes gated here are the operations whose record says they cost credit.
    gated = {e.operation for e in fake.journal.events if e.kind == "response" and e.status == 402}
    assert gated == named(costs_credit=True)
    assert [s.id for s in fake.sandboxes()] == [sandbox_id]
    assert fake.sandbox(sandbox_id).status == "paused"
    assert (await client.get(base + "/bandwidth")).json()["data"] == before
    for listing in ("/v1/disks", "/v1/networks", "/v1/templates"):
        assert (await client.get(listing)).json()["data"]["data"] == [], listing
    # Free routes still work; a balance again opens the gated ones.
    assert (await client.get(base)).status_code == 200
    fake.set_credit(5)
    assert (await client.post(base + "/resume")).status_code == 200
    assert (await client.delete(base)).status_code == 200


async def test_the_owner_check_comes_before_the_credit_check(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    other_key = fake.add_account()
    fake.set_credit(0, api_key=other_key)
    sandbox_id = await paused(client, make_sandbox)
    async with httpx.AsyncClient(
        base_url=fake.url, headers={"X-Api-Key": other_key}, transport=clock_transport(fake.clock)
    ) as other:
        routes = (("resume", None), ("fork", {}), ("bandwidth/recharge", {"add_bytes": 1}))
        for route, body in routes:
            response = await other.post(f"/v1/sandboxes/{sandbox_id}/{route}", json=body)
            assert response.status_code == 404, route
            assert response.json()["data"]["code"] == "sandbox_not_found"
        unknown = await other.post("/v1/sandboxes/sb-nope/resume")
        assert unknown.status_code == 404
    # The other account's empty balance is its own: this account still resumes.
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/resume")).status_code == 200
    assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200


async def test_control_api_sets_and_shows_credit(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    control = {"X-Fake-Control-Key": fake.control_key}
    put = await client.put("/_fake/credit", json={"credit": 0}, headers=control)
    user_id = (await client.get("/v1/whoami")).json()["data"]["user_id"]
    assert (put.status_code, put.json()["data"]) == (200, {"user_id": user_id, "credit": 0.0})
    state = (await client.get("/_fake/state", headers=control)).json()["data"]
    assert [a["credit"] for a in state["accounts"]] == [0.0]
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    assert created.status_code == 402
    again = await client.put(
        "/_fake/credit", json={"credit": None, "account": user_id}, headers=control
    )
    assert again.json()["data"] == {"user_id": user_id, "credit": None}
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    assert created.status_code == 200
    assert (await client.delete(f"/v1/sandboxes/{created.json()['data']['id']}")).status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "data"),
    [
        ({}, 400, {"credit": "is required (null for unlimited)"}),
        ({"credit": -1}, 400, {"credit": "must be null (unlimited) or a number >= 0"}),
        ({"credit": "lots"}, 400, {"credit": "must be null (unlimited) or a number >= 0"}),
        ({"credit": True}, 400, {"credit": "must be null (unlimited) or a number >= 0"}),
        ({"credit": 1, "account": 5}, 400, {"account": "must be an account id (user_id)"}),
        (
            {"credit": 1, "account": "usr-nope"},
            404,
            {"code": "account_not_found", "message": "no account has this id"},
        ),
    ],
)
async def test_control_api_refuses_bad_credit(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    body: dict[str, object],
    status: int,
    data: dict[str, str],
) -> None:
    control = {"X-Fake-Control-Key": fake.control_key}
    response = await client.put("/_fake/credit", json=body, headers=control)
    assert (response.status_code, response.json()) == (status, {"status": "fail", "data": data})
    assert fake.credit() is None


async def test_exhaust_credit_fault_runs_the_account_out_mid_test(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    first = await make_sandbox()
    fault = fake.faults.add(Fault("create_sandbox", ExhaustCredit(), times=1))
    response = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    assert (response.status_code, response.json()) == (402, NO_CREDIT)
    assert fake.faults.fire_count(fault) == 1
    assert [s.id for s in fake.sandboxes()] == [first]
    assert fake.credit() == 0
    assert (await client.post("/v1/networks", json={"name": "n"})).status_code == 402
    assert (await client.delete(f"/v1/sandboxes/{first}")).status_code == 200


async def test_exhaust_credit_now_through_python_and_the_control_api(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    other_key = fake.add_account()
    user_id = (await client.get("/v1/whoami")).json()["data"]["user_id"]
    fake.faults.exhaust_credit(user_id)
    assert (fake.credit(), fake.credit(other_key)) == (0, None)
    fake.set_credit(None)
    control = {"X-Fake-Control-Key": fake.control_key}
    now = await client.post(
        "/_fake/faults/now",
        json={"action": {"type": "exhaust_credit"}, "account": user_id},
        headers=control,
    )
    assert (now.status_code, now.json()["data"]) == (200, {"applied": {"type": "exhaust_credit"}})
    assert (fake.credit(), fake.credit(other_key)) == (0, None)
    unknown = await client.post(
        "/_fake/faults/now",
        json={"action": {"type": "exhaust_credit"}, "account": "usr-nope"},
        headers=control,
    )
    assert (unknown.status_code, unknown.json()["data"]["code"]) == (404, "not_found")
    fake.faults.exhaust_credit()  # every account
    assert fake.credit(other_key) == 0
    assert action_from_json({"type": "exhaust_credit"}) == ExhaustCredit()
