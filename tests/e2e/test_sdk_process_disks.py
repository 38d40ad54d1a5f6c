"""Disks on the process runtime through the official Python SDK: a host directory per bucket
bound into each sandbox's root (no copy), so sandboxes sharing a disk see each other's writes
at once, ``sub_path`` shows one folder, detach unmounts, and the files outlive the sandbox."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from createos import APIError, Client
from createos.models import (
    AttachDiskOptions,
    CreateSandboxRequest,
    DetachDiskOptions,
    DiskAttachment,
    DiskConfig,
    DiskCreateRequest,
    DiskCredentials,
    RunCommandRequest,
)

from fake_server.runtime.process import ProcessRuntime

if TYPE_CHECKING:
    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS


#: Every test here runs on the process runtime (the conftest's fake reads this).
FAKE_RUNTIME = "process"


def _register(sdk: Client, name: str = "data", bucket: str = "bucket-1") -> str:
    disk = sdk.disks.create(
        DiskCreateRequest(
            name=name,
            config=DiskConfig(bucket=bucket, endpoint="https://s3.example.test"),
            credentials=DiskCredentials(access_key="AKIA1", secret_key="secret"),
        )
    )
    return disk.id


def _create(sdk: Client, disks: list[DiskAttachment] | None = None) -> SandboxInstance:
    sandbox = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", disks=disks))
    sandbox.wait_until_running()
    return sandbox


def _sh(sandbox: SandboxInstance, script: str) -> str:
    result = sandbox.run_command(RunCommandRequest(command="bash", arguments=["-c", script]))
    assert result.result.exit_code == 0, result.result.standard_error
    return result.result.standard_output


def _error(call: object) -> APIError:
    with pytest.raises(APIError) as caught:
        call()  # type: ignore[operator]
    return caught.value


def test_sandboxes_sharing_a_disk_see_each_others_writes_and_files_outlive_them(
    sdk: Client, rfake: FakeCreateOS
) -> None:
    disk_id = _register(sdk)
    writer = _create(sdk, [DiskAttachment(disk_id=disk_id, mount_path="/mnt/data")])
    reader = _create(sdk)
    _sh(reader, "echo running before the attach")  # its init runs: the mount reaches it live
    reader.attach_disk(AttachDiskOptions(disk_id="data", mount_path="/srv/shared"))
    _sh(writer, "mkdir -p /mnt/data/logs && echo first > /mnt/data/logs/a.txt")
    assert _sh(reader, "cat /srv/shared/logs/a.txt") == "first\n"
    _sh(reader, "echo second >> /srv/shared/logs/a.txt")
    assert _sh(writer, "cat /mnt/data/logs/a.txt") == "first\nsecond\n"
    reader.files.upload("/srv/shared/b.bin", b"\x00\x01")
    with writer.files.download("/mnt/data/b.bin") as stream:
        assert stream.read() == b"\x00\x01"
    assert _sh(writer, "findmnt -n -o TARGET /mnt/data") == "/mnt/data\n"
    writer.destroy()
    writer.wait_until_destroyed()
    later = _create(sdk, [DiskAttachment(disk_id="data", mount_path="/data")])
    assert _sh(later, "ls /data; cat /data/logs/a.txt") == "b.bin\nlogs\nfirst\nsecond\n"


def test_sub_path_mounts_one_folder_and_detach_unmounts(sdk: Client) -> None:
    disk_id = _register(sdk)
    whole = _create(sdk, [DiskAttachment(disk_id=disk_id, mount_path="/mnt/all")])
    part = _create(sdk)
    part.attach_disk(AttachDiskOptions(disk_id, "/mnt/part", "users/alice"))
    _sh(part, "echo hi > /mnt/part/note")
    assert _sh(whole, "cat /mnt/all/users/alice/note") == "hi\n"
    assert _sh(part, "ls -A /mnt/part") == "note\n"
    assert part.detach_disk(DetachDiskOptions(disk_id, "/mnt/part")) is True
    assert part.list_disks() == []
    assert _sh(part, "ls -A /mnt/part; findmnt /mnt/part || echo unmounted") == "unmounted\n"
    assert _sh(whole, "cat /mnt/all/users/alice/note") == "hi\n"


def test_a_planted_symlink_cannot_reach_outside_the_bucket_or_the_sandbox(sdk: Client) -> None:
    """``sub_path`` and ``mount_path`` are resolved inside the bucket and the sandbox."""
    disk_id = _register(sdk)
    sandbox = _create(sdk, [DiskAttachment(disk_id=disk_id, mount_path="/mnt/all")])
    _sh(sandbox, "ln -s / /mnt/all/escape; ln -s /etc /mnt/link; echo f > /mnt/all/file")
    sandbox.attach_disk(AttachDiskOptions(disk_id, "/mnt/in", "escape"))
    assert _sh(sandbox, "ls -A /mnt/in") == "escape\nfile\n"  # the bucket's own root
    sandbox.attach_disk(AttachDiskOptions(disk_id, "/mnt/link/x"))
    assert _sh(sandbox, "ls /etc/x") == "escape\nfile\n"  # the sandbox's /etc, not the host's
    in_file = _error(lambda: sandbox.attach_disk(AttachDiskOptions(disk_id, "/mnt/f", "file")))
    assert in_file.status_code == 400
    assert "sub_path: names a file in the bucket, not a folder" in str(in_file)
    on_file = _error(lambda: sandbox.attach_disk(AttachDiskOptions(disk_id, "/mnt/all/file")))
    assert on_file.status_code == 400
    assert "mount_path: names a file in the sandbox, not a folder" in str(on_file)
    assert len(sandbox.list_disks()) == 3


def test_a_reset_empties_every_bucket_and_removes_its_directory(
    sdk: Client, rfake: FakeCreateOS
) -> None:
    writer = _create(sdk, [DiskAttachment(disk_id=_register(sdk), mount_path="/mnt/data")])
    _sh(writer, "echo old > /mnt/data/a.txt")
    runtime = rfake.runtimes.get("process")
    assert isinstance(runtime, ProcessRuntime)
    base = runtime.fake_root.path / ".disks"
    assert [sorted(os.listdir(d)) for d in base.iterdir()] == [["a.txt"]]
    rfake.reset()
    assert list(base.iterdir()) == []
    with Client(rfake.api_key, base_url=rfake.url) as client:
        fresh = _create(client, [DiskAttachment(disk_id=_register(client), mount_path="/m")])
        assert _sh(fresh, "ls -A /m") == ""
