"""Out-of-band faults on the account resources, seen through the official SDK: a network
vanishes, a disk is detached from a sandbox, a template build fails. Armed as faults (firing
at the moment of a call), applied now from Python, and over the control API with its key."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from createos import APIError, Client
from createos.models import (
    DiskAttachment,
    DiskConfig,
    DiskCreateRequest,
    DiskCredentials,
    NetworkCreateRequest,
    RunCommandRequest,
    TemplateCreateRequest,
    TemplateStatus,
)

from fake_server import tls_context
from pytest_createos import DetachDisk, FailTemplateBuild, Fault, VanishNetwork

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS

DOCKERFILE = "FROM devbox:1\nRUN echo one\nRUN echo two\n"


def _error(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    return caught.value


def _disk(sdk: Client, name: str = "data") -> str:
    return sdk.disks.create(
        DiskCreateRequest(
            name=name,
            config=DiskConfig(bucket="b-" + name, endpoint="https://s3.example.test"),
            credentials=DiskCredentials(access_key="a", secret_key="s"),
        )
    ).id


def _sh(sandbox: SandboxInstance, script: str) -> str:
    result = sandbox.run_command(RunCommandRequest(command="bash", arguments=["-c", script]))
    return result.result.standard_output


def _fault_events(fake: FakeCreateOS) -> list[str]:
    return [e.detail for e in fake.journal.events if e.kind == "fault"]


def test_a_network_vanishes_at_the_moment_of_a_call(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    network = sdk.networks.create(NetworkCreateRequest(name="mesh"))
    member = running(networks=[{"id": network.id}])
    fault = rfake.faults.add(Fault("get_network", VanishNetwork()))
    gone = _error(lambda: sdk.networks.get(network.id))
    assert (gone.status_code, fault.fired) == (404, 1)
    assert sdk.networks.list() == []
    detach = _error(lambda: member.detach_network(network.id))
    assert detach.status_code == 404
    assert b"network not found" in detach.body
    assert _error(lambda: running(networks=[{"id": network.id}])).status_code == 404
    assert _fault_events(rfake) == ["fault#1 VanishNetwork(network_id=None)"]


def test_a_disk_is_detached_by_a_fault_on_the_sandbox_s_next_call(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    disk_id = _disk(sdk)
    sandbox = running(disks=[DiskAttachment(disk_id=disk_id, mount_path="/mnt/d")])
    _sh(sandbox, "echo persisted > /mnt/d/f")
    rfake.faults.add(Fault("exec", DetachDisk(disk_id), sandbox_id=sandbox.id))
    assert _sh(sandbox, "ls -A /mnt/d; echo end") == "end\n"  # gone before the command ran
    assert sandbox.list_disks() == []
    again = running(disks=[DiskAttachment(disk_id=disk_id, mount_path="/data")])
    assert _sh(again, "cat /data/f") == "persisted\n"


def test_a_template_build_fails_when_polled(sdk: Client, rfake: FakeCreateOS) -> None:
    template = sdk.templates.create(TemplateCreateRequest(name="app", dockerfile=DOCKERFILE))
    rfake.faults.add(Fault("get_template", FailTemplateBuild(reason="builder evicted")))
    assert sdk.templates.get(template.id).status is TemplateStatus.FAILED
    assert sdk.templates.logs(template.id).splitlines() == ["build failed: builder evicted"]
    rfake.clock.advance(60)  # type: ignore[attr-defined]
    assert sdk.templates.get(template.id).status is TemplateStatus.FAILED


@pytest.fixture(name="control")
def _control(rfake: FakeCreateOS) -> Iterator[httpx.Client]:
    keys = {"X-Api-Key": rfake.api_key, "X-Fake-Control-Key": rfake.control_key}
    with httpx.Client(base_url=rfake.url, headers=keys, timeout=10, verify=tls_context()) as client:
        yield client


def _now(control: httpx.Client, action: dict[str, object], **ids: str) -> httpx.Response:
    return control.post("/_fake/faults/now", json={"action": action, **ids})


def test_control_api_applies_each_resource_change(
    sdk: Client,
    rfake: FakeCreateOS,
    control: httpx.Client,
    running: Callable[..., SandboxInstance],
) -> None:
    network = sdk.networks.create(NetworkCreateRequest(name="mesh"))
    disk_id = _disk(sdk)
    sandbox = running(
        networks=[{"id": network.id}],
        disks=[DiskAttachment(disk_id=disk_id, mount_path="/mnt/d")],
    )
    template = sdk.templates.create(TemplateCreateRequest(name="app", dockerfile=DOCKERFILE))
    account = rfake.world.account_for_key(rfake.api_key).id  # type: ignore[union-attr]
    with httpx.Client(
        base_url=rfake.url, headers={"X-Api-Key": rfake.api_key}, verify=tls_context()
    ) as plain:
        refused = plain.post(
            "/_fake/faults/now",
            json={"action": {"type": "vanish_network", "network_id": network.id}},
        )
    assert refused.status_code == 403  # the account key does not open the control API
    assert refused.json()["data"] == {
        "code": "control_key_required",
        "message": "account API keys do not open the control API; send the fake's control key "
        "in X-Fake-Control-Key",
    }
    assert [n.id for n in sdk.networks.list()] == [network.id]
    applied = _now(control, {"type": "vanish_network", "network_id": network.id}, account=account)
    assert applied.json() == {
        "status": "success",
        "data": {"applied": {"type": "vanish_network", "network_id": network.id}},
    }
    detach = {"type": "detach_disk", "disk_id": disk_id, "mount_path": "/mnt/d"}
    assert _now(control, detach, sandbox_id=sandbox.id).status_code == 200
    failing = {"type": "fail_template_build", "template_id": template.id, "reason": "quota"}
    assert _now(control, failing).status_code == 200
    assert sdk.networks.list() == []
    assert sandbox.list_disks() == []
    assert sdk.templates.logs(template.id).splitlines()[-1] == "build failed: quota"
    assert _fault_events(rfake) == [
        f"applied now VanishNetwork(network_id='{network.id}')",
        f"applied now DetachDisk(disk_id='{disk_id}', sandbox_id=None, mount_path='/mnt/d')",
        f"applied now FailTemplateBuild(template_id='{template.id}', reason='quota')",
    ]


def test_control_api_refuses_bad_targets_with_exact_messages(
    sdk: Client,
    rfake: FakeCreateOS,
    control: httpx.Client,
    running: Callable[..., SandboxInstance],
) -> None:
    network = sdk.networks.create(NetworkCreateRequest(name="mesh"))
    disk_id = _disk(sdk)
    sandbox = running()
    template = sdk.templates.create(TemplateCreateRequest(name="app", dockerfile=DOCKERFILE))
    other_key = rfake.add_account()
    other = rfake.world.account_for_key(other_key).id  # type: ignore[union-attr]
    with httpx.Client(
        base_url=rfake.url, headers={"X-Api-Key": other_key}, verify=tls_context()
    ) as stranger:
        strange = stranger.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()["data"]
    cases: list[tuple[dict[str, object], dict[str, str], int, dict[str, str]]] = [
        (
            {"type": "vanish_network", "network_id": "net_missing"},
            {},
            404,
            {"code": "not_found", "message": "no such network"},
        ),
        (
            {"type": "vanish_network", "network_id": network.id},
            {"account": other},
            409,
            {"code": "wrong_account", "message": "the network belongs to another account"},
        ),
        (
            {"type": "vanish_network"},
            {},
            400,
            {"action.network_id": "required string for this action"},
        ),
        (
            {"type": "vanish_network", "network_id": network.id},
            {"account": ""},
            400,
            {"account": "must be a non-empty string"},
        ),
        (
            {"type": "detach_disk", "disk_id": "disk_missing"},
            {},
            404,
            {"code": "not_found", "message": "no such disk"},
        ),
        (
            {"type": "detach_disk", "disk_id": disk_id},
            {"sandbox_id": sandbox.id},
            409,
            {"code": "not_attached", "message": "the disk is not attached to this sandbox"},
        ),
        (
            {"type": "detach_disk", "disk_id": disk_id, "mount_path": "/mnt/x"},
            {},
            409,
            {
                "code": "not_attached",
                "message": "the disk is not attached to any sandbox at /mnt/x",
            },
        ),
        (
            {"type": "detach_disk", "disk_id": disk_id},
            {"sandbox_id": strange["id"]},
            409,
            {
                "code": "wrong_account",
                "message": "the disk and the sandbox belong to different accounts",
            },
        ),
        (
            {"type": "detach_disk", "disk_id": disk_id},
            {"sandbox_id": "sb-missing"},
            404,
            {"code": "not_found", "message": "no such sandbox"},
        ),
        (
            {"type": "fail_template_build", "template_id": "tpl_missing"},
            {},
            404,
            {"code": "not_found", "message": "no such template"},
        ),
        (
            {"type": "fail_template_build", "template_id": template.id, "reason": ""},
            {},
            400,
            {"action.reason": "reason must be one line of 1 to 200 characters"},
        ),
    ]
    for action, ids, status, data in cases:
        response = _now(control, action, **ids)
        assert (response.status_code, response.json()["data"]) == (status, data), action
    rfake.clock.advance(60)  # type: ignore[attr-defined]
    ended = _now(control, {"type": "fail_template_build", "template_id": template.id})
    assert (ended.status_code, ended.json()["data"]) == (
        409,
        {"code": "build_ended", "message": "the template build already ended (status ready)"},
    )
    # Nothing was lost: every refused change left its resource as it was.
    assert [n.id for n in sdk.networks.list()] == [network.id]
    assert sdk.disks.get(disk_id).id == disk_id
    assert sdk.templates.get(template.id).status is TemplateStatus.READY
    assert _fault_events(rfake) == []
