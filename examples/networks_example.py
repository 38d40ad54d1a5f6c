"""Two sandboxes on one overlay network: member IPs, and a delete that waits for them."""

import pytest
from createos import APIError, CreateSandboxRequest, NetworkCreateRequest, NetworkEntry


def test_network_members(createos_sdk):
    network = createos_sdk.networks.create(NetworkCreateRequest(name="backend"))
    joined = [NetworkEntry(id=network.id)]
    first = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", networks=joined))
    second = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    first.wait_until_running()
    second.wait_until_running()
    second.attach_network(network.id)  # a running sandbox joins later

    members = createos_sdk.networks.get(network.id).members
    assert {m.sandbox_id: m.ip_address for m in members} == {
        first.id: "10.200.0.2",
        second.id: "10.200.0.3",
    }

    with pytest.raises(APIError) as in_use:
        createos_sdk.networks.delete(network.id)
    assert in_use.value.status_code == 409

    second.detach_network(network.id)
    first.destroy()
    second.destroy()
    first.wait_until_destroyed()
    createos_sdk.networks.delete(network.id)
