"""Networks through the official SDK: CRUD, members and their IPs, attach/detach, create-time
membership, quota, conflicts, in-use deletes, faults and the journal."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from createos import APIError, Client
from createos.models import NetworkCreateRequest, NetworkEntry, PaginationOptions

from fake_server import Fault
from fake_server.faults import HttpError

if TYPE_CHECKING:
    from collections.abc import Callable

    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS
    from fake_server.models.account import Account


def _error(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    return caught.value


def test_create_attach_list_detach_delete(
    sdk: Client, running: Callable[..., SandboxInstance]
) -> None:
    network = sdk.networks.create(NetworkCreateRequest(name="backend"))
    assert network.id.startswith("net_")
    assert network.name == "backend"
    assert (network.member_count, network.members) == (0, [])
    sandbox = running()
    sandbox.attach_network(network.id)
    members = sdk.networks.get(network.id).members
    assert [(m.sandbox_id, m.status, m.ip_address, m.name) for m in members] == [
        (sandbox.id, "active", "10.200.0.2", sandbox.name)
    ]
    listed = sdk.networks.list()
    assert [(n.id, n.member_count) for n in listed] == [(network.id, 1)]
    sandbox.detach_network(network.id)
    assert sdk.networks.get(network.id).members == []
    sdk.networks.delete(network.id)
    assert _error(lambda: sdk.networks.get(network.id)).status_code == 404


def test_members_get_distinct_ips_and_cidrs_do_not_overlap(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    first = sdk.networks.create(NetworkCreateRequest(name="one"))
    second = sdk.networks.create(NetworkCreateRequest(name="two"))
    a = running(networks=[NetworkEntry(id=first.id)])
    b = running(networks=[NetworkEntry(id=first.id), NetworkEntry(id=second.id)])
    ips = {m.sandbox_id: m.ip_address for m in sdk.networks.get(first.id).members}
    assert ips == {a.id: "10.200.0.2", b.id: "10.200.0.3"}
    assert [m.ip_address for m in sdk.networks.get(second.id).members] == ["10.200.1.2"]
    raw = httpx.get(
        f"{rfake.url}/v1/networks/{second.id}", headers={"X-Api-Key": rfake.api_key}
    ).json()["data"]
    assert raw["cidr"] == "10.200.1.0/24"


def test_pagination_walks_every_page(sdk: Client) -> None:
    for index in range(3):
        sdk.networks.create(NetworkCreateRequest(name=f"n{index}"))
    names = [n.name for n in sdk.networks.list(PaginationOptions(limit=2, offset=1))]
    assert names == ["n1", "n2"]


def test_name_rules_duplicates_and_quota(sdk: Client, rfake: FakeCreateOS) -> None:
    bad = _error(lambda: sdk.networks.create(NetworkCreateRequest(name="Bad Name")))
    assert (bad.status_code, str(bad).split(": ", 2)[2]) == (
        400,
        "name: must match ^[a-z0-9][a-z0-9-]{0,62}$",
    )
    sdk.networks.create(NetworkCreateRequest(name="team"))
    dup = _error(lambda: sdk.networks.create(NetworkCreateRequest(name="team")))
    assert dup.status_code == 409
    assert "a network with this name already exists" in str(dup)
    rfake.world.ctx.resources.max_networks = 1
    quota = _error(lambda: sdk.networks.create(NetworkCreateRequest(name="more")))
    assert quota.status_code == 403
    assert "network quota exceeded (1 per account)" in str(quota)
    assert [n.name for n in sdk.networks.list()] == ["team"]


def test_explicit_cidr_conflicts_and_validation(rfake: FakeCreateOS) -> None:
    headers = {"X-Api-Key": rfake.api_key}
    with httpx.Client(base_url=rfake.url, headers=headers) as http:
        made = http.post("/v1/networks", json={"name": "a", "cidr": "10.10.0.0/24"})
        assert (made.status_code, made.json()["data"]["cidr"]) == (201, "10.10.0.0/24")
        net_id = made.json()["data"]["id"]
        clash = http.post("/v1/networks", json={"name": "b", "cidr": "10.10.0.128/25"})
        assert clash.status_code == 400
        assert clash.json() == {
            "status": "fail",
            "data": {"cidr": f"conflicts with network {net_id} (10.10.0.0/24)"},
        }
        public = http.post("/v1/networks", json={"name": "c", "cidr": "8.8.8.0/24"})
        assert public.json()["data"] == {"cidr": "must be a private range from /16 to /28"}
        junk = http.post("/v1/networks", json={"name": "d", "cidr": "10.0.0.1/33"})
        assert junk.json()["data"] == {"cidr": "is not a valid IPv4 network such as 10.10.0.0/24"}
        assert len(http.get("/v1/networks").json()["data"]["data"]) == 1


def test_delete_with_members_is_409_until_the_sandbox_is_gone(
    sdk: Client, running: Callable[..., SandboxInstance]
) -> None:
    network = sdk.networks.create(NetworkCreateRequest(name="busy"))
    sandbox = running(networks=[NetworkEntry(id=network.id)])
    busy = _error(lambda: sdk.networks.delete(network.id))
    assert busy.status_code == 409
    assert "network in use: 1 member(s); detach them first" in str(busy)
    assert sdk.networks.get(network.id).member_count == 1
    sandbox.destroy()
    sandbox.wait_until_destroyed()
    sdk.networks.delete(network.id)
    assert sdk.networks.list() == []


def test_attach_needs_a_running_sandbox_and_detach_an_attachment(
    sdk: Client, running: Callable[..., SandboxInstance]
) -> None:
    network = sdk.networks.create(NetworkCreateRequest(name="edge"))
    sandbox = running()
    missing = _error(lambda: sandbox.attach_network("net_missing"))
    assert (missing.status_code, "network not found" in str(missing)) == (404, True)
    not_attached = _error(lambda: sandbox.detach_network(network.id))
    assert not_attached.status_code == 404
    assert "sandbox is not attached to this network" in str(not_attached)
    sandbox.attach_network(network.id)
    again = _error(lambda: sandbox.attach_network(network.id))
    assert again.status_code == 409
    sandbox.pause()
    sandbox.wait_until_paused()
    sandbox.detach_network(network.id)
    paused = _error(lambda: sandbox.attach_network(network.id))
    assert paused.status_code == 409
    assert sdk.networks.get(network.id).members == []


def test_create_refuses_unknown_networks_hosts_and_selectors(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    headers = {"X-Api-Key": rfake.api_key}
    cases = [
        ({"networks": [{"id": "net_nope"}]}, 404, {"networks": "network net_nope not found"}),
        ({"networks": "net_x"}, 400, {"networks": "must be a list of {id} objects"}),
        ({"host_id": "host-nowhere"}, 404, {"host_id": "host not found"}),
        ({"host_id": "host-us-1", "region": "eu"}, 400, {"host_id": "host is in region us"}),
        (
            {"node_selector": {"arch": "arm64"}},
            400,
            {"node_selector": "no host matches these labels"},
        ),
    ]
    with httpx.Client(base_url=rfake.url, headers=headers) as http:
        for extra, status, data in cases:
            response = http.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", **extra})
            assert (response.status_code, response.json()["data"]) == (status, data), extra
        assert http.get("/v1/sandboxes").json()["data"]["pagination"]["total"] == 0
    placed = running(host_id="host-eu-1", node_selector={"arch": "amd64"})
    assert placed.status.value == "running"


def test_networks_are_per_account_faultable_and_journaled(
    sdk: Client, rfake: FakeCreateOS, account: Account
) -> None:
    network = sdk.networks.create(NetworkCreateRequest(name="mine"))
    other = rfake.add_account()
    with Client(other, base_url=rfake.url) as stranger:
        assert stranger.networks.list() == []
        assert _error(lambda: stranger.networks.get(network.id)).status_code == 404
    rfake.faults.add(Fault("create_network", HttpError(500)))
    failed = _error(lambda: sdk.networks.create(NetworkCreateRequest(name="later")))
    assert failed.status_code == 500
    assert [n.name for n in sdk.networks.list()] == ["mine"]
    rfake.faults.vanish_network(network.id)
    assert _error(lambda: sdk.networks.get(network.id)).status_code == 404
    operations = rfake.journal.operations()
    assert operations[:1] == ["create_network"]
    assert "get_network" in operations
    assert "list_networks" in operations
