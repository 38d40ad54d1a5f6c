"""Disks through the official SDK: registration by id or name, credential rotation (never
echoed), attach/detach with mount paths, shared files that outlive sandboxes, the 409 for an
attached disk and the "not configured" 503."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from createos import APIError, Client
from createos.models import (
    AttachDiskOptions,
    DetachDiskOptions,
    DiskAttachment,
    DiskConfig,
    DiskCreateRequest,
    DiskCredentials,
    DiskMountStatus,
    RetryOptions,
    RunCommandRequest,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS
    from fake_server.models.account import Account

SECRET = "s3cr3t-value-never-echoed"


def _error(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    return caught.value


def _register(sdk: Client, name: str = "data", bucket: str = "bucket-1") -> str:
    disk = sdk.disks.create(
        DiskCreateRequest(
            name=name,
            config=DiskConfig(bucket=bucket, endpoint="https://s3.example.test", region="eu"),
            credentials=DiskCredentials(access_key="AKIA1", secret_key=SECRET),
        )
    )
    return disk.id


def _sh(sandbox: SandboxInstance, script: str) -> str:
    result = sandbox.run_command(RunCommandRequest(command="bash", arguments=["-c", script]))
    assert result.result.exit_code == 0, result.result.standard_error
    return result.result.standard_output


def test_register_get_by_id_or_name_list_delete(sdk: Client, rfake: FakeCreateOS) -> None:
    disk_id = _register(sdk)
    assert disk_id.startswith("disk_")
    by_id, by_name = sdk.disks.get(disk_id), sdk.disks.get("data")
    assert by_id == by_name
    assert (by_id.name, by_id.config.bucket, by_id.config.region) == ("data", "bucket-1", "eu")
    assert [d.id for d in sdk.disks.list()] == [disk_id]
    again = _register(sdk)  # idempotent by name
    assert again == disk_id
    raw = httpx.get(f"{rfake.url}/v1/disks", headers={"X-Api-Key": rfake.api_key}).text
    assert SECRET not in raw
    assert "AKIA1" not in raw
    assert sdk.disks.delete("data") is True
    assert _error(lambda: sdk.disks.get(disk_id)).status_code == 404


def test_rotate_credentials_replaces_them_and_never_echoes(
    sdk: Client, rfake: FakeCreateOS, account: Account
) -> None:
    disk_id = _register(sdk)
    rotated = sdk.disks.rotate_credentials("data", DiskCredentials("AKIA2", "new-secret-xyz"))
    assert rotated.id == disk_id
    stored = account.resources.disks.items[disk_id]
    assert (stored.access_key, stored.secret_key, stored.rotations) == (
        "AKIA2",
        "new-secret-xyz",
        1,
    )
    empty = _error(lambda: sdk.disks.rotate_credentials(disk_id, DiskCredentials("AKIA3", "")))
    assert empty.status_code == 400
    assert str(empty).endswith("credentials.secret_key: must not be empty")
    assert stored.secret_key == "new-secret-xyz"
    events = "\n".join(e.format() for e in rfake.journal.events)
    assert "new-secret-xyz" not in events


def test_files_are_shared_between_sandboxes_and_outlive_them(
    sdk: Client, running: Callable[..., SandboxInstance]
) -> None:
    disk_id = _register(sdk)
    writer = running(disks=[DiskAttachment(disk_id=disk_id, mount_path="/mnt/data")])
    reader = running()
    reader.attach_disk(AttachDiskOptions(disk_id="data", mount_path="/srv/shared"))
    _sh(writer, "mkdir -p /mnt/data/logs && echo first > /mnt/data/logs/a.txt")
    assert _sh(reader, "cat /srv/shared/logs/a.txt") == "first\n"
    reader.files.upload("/srv/shared/b.bin", b"\x00\x01")
    with writer.files.download("/mnt/data/b.bin") as stream:
        assert stream.read() == b"\x00\x01"
    listed = writer.list_disks()
    assert [(d.disk_id, d.mount_path, d.mount_status) for d in listed] == [
        (disk_id, "/mnt/data", DiskMountStatus.MOUNTED)
    ]
    writer.destroy()
    writer.wait_until_destroyed()
    later = running(disks=[DiskAttachment(disk_id="data", mount_path="/data")])
    assert _sh(later, "ls /data; cat /data/logs/a.txt") == "b.bin\nlogs\nfirst\n"


def test_detach_unmounts_and_reports_whether_it_did(
    sdk: Client, running: Callable[..., SandboxInstance]
) -> None:
    disk_id = _register(sdk)
    sandbox = running()
    sandbox.attach_disk(AttachDiskOptions(disk_id=disk_id, mount_path="/mnt/a"))
    _sh(sandbox, "echo kept > /mnt/a/f")
    by_name = _error(lambda: sandbox.detach_disk(DetachDiskOptions("data", "/mnt/a")))
    assert by_name.status_code == 404
    assert "detach takes the disk id, not its name" in str(by_name)
    assert sandbox.detach_disk(DetachDiskOptions(disk_id, "/mnt/other")) is False
    assert sandbox.detach_disk(DetachDiskOptions(disk_id, "/mnt/a")) is True
    assert sandbox.list_disks() == []
    assert _sh(sandbox, "ls /mnt/a") == ""
    sandbox.attach_disk(AttachDiskOptions(disk_id=disk_id, mount_path="/mnt/b"))
    assert _sh(sandbox, "cat /mnt/b/f") == "kept\n"


def test_delete_of_an_attached_disk_is_409(
    sdk: Client, running: Callable[..., SandboxInstance]
) -> None:
    disk_id = _register(sdk)
    sandbox = running(disks=[DiskAttachment(disk_id=disk_id, mount_path="/mnt/data")])
    attached = _error(lambda: sdk.disks.delete(disk_id))
    assert attached.status_code == 409
    assert "disk is attached to a sandbox; detach it first" in str(attached)
    assert sdk.disks.get(disk_id).id == disk_id
    sandbox.destroy()
    sandbox.wait_until_destroyed()
    assert sdk.disks.delete(disk_id) is True


def test_attach_validation(sdk: Client, running: Callable[..., SandboxInstance]) -> None:
    disk_id = _register(sdk)
    sandbox = running()
    cases = [
        (AttachDiskOptions("disk_missing", "/mnt/x"), 404, "disk not found"),
        (AttachDiskOptions(disk_id, "relative"), 400, "mount_path: must be an absolute path"),
        (AttachDiskOptions(disk_id, "/etc"), 400, "mount_path: is a system path"),
        (AttachDiskOptions(disk_id, "/mnt/x", "../up"), 400, "sub_path: must be relative"),
    ]
    for options, status, text in cases:
        error = _error(lambda options=options: sandbox.attach_disk(options))
        assert (error.status_code, text in str(error)) == (status, True), str(error)
    sandbox.attach_disk(AttachDiskOptions(disk_id, "/mnt/x"))
    busy = _error(lambda: sandbox.attach_disk(AttachDiskOptions(disk_id, "/mnt/x")))
    assert busy.status_code == 409
    assert len(sandbox.list_disks()) == 1


def test_create_validation_and_quota(sdk: Client, rfake: FakeCreateOS) -> None:
    headers = {"X-Api-Key": rfake.api_key}
    with httpx.Client(base_url=rfake.url, headers=headers) as http:
        bad_endpoint = http.post(
            "/v1/disks",
            json={
                "name": "d",
                "kind": "s3",
                "config": {"bucket": "b", "endpoint": "ftp://x"},
                "credentials": {"access_key": "a", "secret_key": "s"},
            },
        )
        assert bad_endpoint.json()["data"] == {"config.endpoint": "must be an http(s) URL"}
        unknown = http.post(
            "/v1/sandboxes",
            json={"shape": "s-1vcpu-1gb", "disks": [{"disk_id": "nope", "mount_path": "/d"}]},
        )
        assert (unknown.status_code, unknown.json()["data"]) == (404, {"disks": "disk not found"})
    _register(sdk, "one")
    rfake.world.ctx.resources.max_disks = 1
    quota = _error(lambda: _register(sdk, "two", "bucket-2"))
    assert quota.status_code == 403
    assert "disk quota exceeded (1 per account)" in str(quota)
    clash = _error(lambda: _register(sdk, "one", "other-bucket"))
    assert clash.status_code == 409


def test_disks_api_not_configured_is_503(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    sandbox_id = running().id
    rfake.world.ctx.resources.disks_configured = False
    # The SDK retries a 503 after a real-time backoff: no retries keep the test fast.
    with Client(rfake.api_key, base_url=rfake.url, retry=RetryOptions(max_retries=0)) as quick:
        sandbox = quick.get_sandbox(sandbox_id)
        for call in (
            quick.disks.list,
            lambda: _register(quick),
            lambda: quick.disks.get("data"),
            sandbox.list_disks,
            lambda: sandbox.attach_disk(AttachDiskOptions("data", "/mnt/x")),
        ):
            error = _error(call)
            assert error.status_code == 503
            assert error.body.startswith(b'{"status": "error"')
            assert b"disks API not configured" in error.body
    assert len(rfake.journal.responses()) >= 5
    rfake.world.ctx.resources.disks_configured = True
    assert sdk.disks.list() == []


def test_out_of_band_detach(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    disk_id = _register(sdk)
    sandbox = running(disks=[DiskAttachment(disk_id=disk_id, mount_path="/mnt/data")])
    other = running(disks=[DiskAttachment(disk_id=disk_id, mount_path="/data")])
    _sh(sandbox, "echo kept > /mnt/data/f")
    rfake.faults.detach_disk(disk_id, sandbox.id)
    assert sandbox.list_disks() == []
    assert _sh(sandbox, "ls /mnt/data") == ""
    assert _sh(other, "cat /data/f") == "kept\n"  # the disk's data and other mounts survive
    sandbox.attach_disk(AttachDiskOptions(disk_id, "/mnt/data"))
    assert _sh(sandbox, "cat /mnt/data/f") == "kept\n"


def test_sub_path_mounts_a_folder_of_the_same_bucket(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    disk_id = _register(sdk)
    whole = running(disks=[DiskAttachment(disk_id=disk_id, mount_path="/mnt/all")])
    _sh(whole, "mkdir -p /mnt/all/a && echo early > /mnt/all/a/before && echo top > /mnt/all/t")
    first = running(disks=[DiskAttachment(disk_id, "/mnt/a", "a")])
    second = running(disks=[DiskAttachment(disk_id, "/mnt/b", "b/")])
    _sh(first, "echo one > /mnt/a/f")
    _sh(second, "echo two > /mnt/b/f")
    # Each sub_path sees its own folder only; the root mount sees both folders and the top file.
    assert _sh(first, "ls /mnt/a; cat /mnt/a/before") == "before\nf\nearly\n"
    assert _sh(second, "ls /mnt/b") == "f\n"
    assert _sh(whole, "cat /mnt/all/a/f /mnt/all/b/f; ls /mnt/all") == "one\ntwo\na\nb\nt\n"
    _sh(whole, "echo from-root > /mnt/all/b/g; mkdir /mnt/all/a/deep")
    nested = running(disks=[DiskAttachment(disk_id, "/work", "a/deep")])
    _sh(nested, "echo deep > /work/d")
    assert _sh(second, "cat /mnt/b/g") == "from-root\n"
    assert _sh(first, "cat /mnt/a/deep/d") == "deep\n"
    assert _sh(whole, "find /mnt/all -type f | sort") == (
        "/mnt/all/a/before\n/mnt/all/a/deep/d\n/mnt/all/a/f\n/mnt/all/b/f\n/mnt/all/b/g\n"
        "/mnt/all/t\n"
    )
    assert rfake.sandbox(whole.id).disk.read_file("/mnt/all/a/deep/d") == b"deep\n"  # files API
    first.detach_disk(DetachDiskOptions(disk_id, "/mnt/a"))
    assert _sh(whole, "cat /mnt/all/a/f") == "one\n"  # the data outlives the sub_path mount
    _sh(whole, "echo x > /mnt/all/file")
    bad = _error(lambda: second.attach_disk(AttachDiskOptions(disk_id, "/mnt/x", "file/sub")))
    assert (bad.status_code, "sub_path: names a file in the bucket" in str(bad)) == (400, True)


def test_a_fork_starts_without_the_disk_and_can_attach_it(
    sdk: Client, running: Callable[..., SandboxInstance]
) -> None:
    disk_id = _register(sdk)
    parent = running(disks=[DiskAttachment(disk_id=disk_id, mount_path="/mnt/d")])
    _sh(parent, "echo shared > /mnt/d/f; echo own > /root/own")
    parent.pause()
    parent.wait_until_paused()
    child = parent.fork()
    child.wait_until_running()
    assert child.list_disks() == []
    assert _sh(child, "cat /root/own; ls -A /mnt/d") == "own\n"
    child.attach_disk(AttachDiskOptions(disk_id, "/mnt/d"))  # a bashkit fork takes mounts
    assert _sh(child, "cat /mnt/d/f") == "shared\n"
