"""A world worth restoring, made and checked through the official SDK: files, a running, a
paused and a forked sandbox, a network, a disk with files, an access token and a
template; shared by the in-process restart tests and the ``serve`` subprocess ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx
from createos.models import (
    AttachDiskOptions,
    CreateSandboxRequest,
    DiskConfig,
    DiskCreateRequest,
    DiskCredentials,
    ForkSandboxRequest,
    NetworkCreateRequest,
    SandboxStatus,
    TemplateCreateRequest,
)

if TYPE_CHECKING:
    from createos import Client

__all__ = ["Made", "check_world", "make_world"]

SHAPE = "s-1vcpu-1gb"
PAYLOAD = bytes(range(256)) * 64  # 16 KiB, every byte value


@dataclass
class Made:
    running: str
    paused: str
    fork: str
    network: str
    token: str
    template: str
    disk: str | None


def make_world(client: Client, *, disks: bool) -> Made:
    """``disks``: mount a disk too (the process runtime's host-directory layout has none)."""
    running = client.create_sandbox(
        CreateSandboxRequest(shape=SHAPE, environment_variables={"GREETING": "hello"})
    )
    running.files.upload("/home/sandbox/blob.bin", PAYLOAD)
    assert (
        running.shell("mkdir -p /srv/app && echo written > /srv/app/note.txt").result.exit_code == 0
    )
    network = client.networks.create(NetworkCreateRequest(name="persisted"))
    running.attach_network(network.id)
    disk_id = None
    if disks:
        disk = client.disks.create(
            DiskCreateRequest(
                name="bucket-disk",
                config=DiskConfig(bucket="b1", endpoint="https://s3.example.test"),
                credentials=DiskCredentials(access_key="AK", secret_key="SK"),
            )
        )
        disk_id = disk.id
        running.attach_disk(AttachDiskOptions(disk_id=disk.id, mount_path="/mnt/data"))
        assert running.shell("echo on-disk > /mnt/data/kept.txt").result.exit_code == 0
    token = running.create_access_token().token
    paused = client.create_sandbox(CreateSandboxRequest(shape=SHAPE))
    paused.files.upload("/tmp/paused.txt", b"paused files\n")
    paused.pause()
    assert paused.refresh().status == SandboxStatus.PAUSED
    fork = paused.fork(ForkSandboxRequest(start_paused=True))
    template = client.templates.create(
        TemplateCreateRequest(
            name="tpl-kept",
            dockerfile="FROM devbox:1\nRUN mkdir -p /srv && echo from-template > /srv/t.txt\n",
        )
    )
    return Made(running.id, paused.id, fork.id, network.id, token, template.id, disk_id)


def check_world(client: Client, api_key: str, made: Made) -> None:
    """Everything ``make_world`` made is back: statuses, files, memberships, token, template."""
    running = client.get_sandbox(made.running)
    assert running.status == SandboxStatus.PAUSED  # processes do not survive a restart
    assert client.get_sandbox(made.paused).status == SandboxStatus.PAUSED
    assert client.get_sandbox(made.fork).status == SandboxStatus.PAUSED
    running.resume()
    running.wait_until_running()
    assert running.files.download("/home/sandbox/blob.bin").read() == PAYLOAD
    result = running.shell("cat /srv/app/note.txt; echo $GREETING").result
    assert (result.exit_code, result.standard_output) == (0, "written\nhello\n")
    if made.disk is not None:
        assert running.shell("cat /mnt/data/kept.txt").result.standard_output == "on-disk\n"
        assert [d.id for d in client.disks.list()] == [made.disk]
    members = client.networks.get(made.network).members
    assert [m.sandbox_id for m in members] == [made.running]
    assert running.with_access_token(made.token).refresh().id == made.running
    paused = client.get_sandbox(made.paused)
    paused.resume()
    paused.wait_until_running()
    assert paused.files.download("/tmp/paused.txt").read() == b"paused files\n"
    fork = client.get_sandbox(made.fork)
    fork.resume()
    fork.wait_until_running()
    assert fork.files.download("/tmp/paused.txt").read() == b"paused files\n"
    # The rest of the build, if any (the SDK 0.7's follow_logs cannot decode its events).
    reply = httpx.get(
        f"{client.base_url}/v1/templates/{made.template}/logs",
        params={"follow": "true"},
        headers={"X-Api-Key": api_key},
        timeout=30,
    )
    assert reply.status_code == 200
    assert client.templates.get(made.template).status.value == "ready"
    child = client.create_sandbox(CreateSandboxRequest(shape=SHAPE, rootfs="tpl-kept"))
    assert child.shell("cat /srv/t.txt").result.standard_output == "from-template\n"
    for sandbox_id in (made.running, made.paused, made.fork, child.id):
        client.get_sandbox(sandbox_id).destroy()
