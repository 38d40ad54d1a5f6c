"""Out-of-band faults on account resources: a network vanishes at the moment of a call, a disk
is detached from a sandbox behind its back (its data stays in the bucket)."""

import pytest
from createos import (
    APIError,
    AttachDiskOptions,
    CreateSandboxRequest,
    DiskAttachment,
    DiskConfig,
    DiskCreateRequest,
    DiskCredentials,
    NetworkCreateRequest,
    RunCommandRequest,
)

from pytest_createos import Fault, VanishNetwork


def test_network_vanishes_when_read(createos_sdk, createos_fake):
    network = createos_sdk.networks.create(NetworkCreateRequest(name="backend"))
    createos_fake.faults.add(Fault("get_network", VanishNetwork()))
    with pytest.raises(APIError) as gone:
        createos_sdk.networks.get(network.id)  # the network vanished just before the read
    assert gone.value.status_code == 404
    assert createos_sdk.networks.list() == []


def test_disk_detached_out_of_band(createos_sdk, createos_fake):
    disk = createos_sdk.disks.create(
        DiskCreateRequest(
            name="data",
            config=DiskConfig(bucket="my-bucket", endpoint="https://s3.example.test"),
            credentials=DiskCredentials(access_key="AKIA...", secret_key="never-echoed"),
        )
    )
    mounted = [DiskAttachment(disk_id=disk.id, mount_path="/mnt/data")]
    box = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", disks=mounted))
    box.wait_until_running()

    def sh(script):
        request = RunCommandRequest(command="bash", arguments=["-c", script])
        return box.run_command(request).result.standard_output

    sh("echo kept > /mnt/data/f")
    createos_fake.faults.detach_disk(disk.id, box.id)
    assert box.list_disks() == []
    assert sh("ls -A /mnt/data") == ""  # the files vanished from this sandbox
    box.attach_disk(AttachDiskOptions(disk_id=disk.id, mount_path="/mnt/data"))
    assert sh("cat /mnt/data/f") == "kept\n"  # the disk's data survived
    box.destroy()
