"""One disk attached to two sandboxes: a file written in one is read in the other and stays
after both are gone."""

from createos import (
    AttachDiskOptions,
    CreateSandboxRequest,
    DetachDiskOptions,
    DiskAttachment,
    DiskConfig,
    DiskCreateRequest,
    DiskCredentials,
    RunCommandRequest,
)


def test_shared_disk(createos_sdk):
    disk = createos_sdk.disks.create(
        DiskCreateRequest(
            name="shared-data",
            config=DiskConfig(bucket="my-bucket", endpoint="https://s3.example.test"),
            credentials=DiskCredentials(access_key="AKIA...", secret_key="never-echoed"),
        )
    )
    mounted = [DiskAttachment(disk_id=disk.id, mount_path="/mnt/data")]
    writer = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", disks=mounted))
    reader = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    writer.wait_until_running()
    reader.wait_until_running()
    reader.attach_disk(AttachDiskOptions(disk_id="shared-data", mount_path="/data"))

    writer.run_command(RunCommandRequest(command="bash", arguments=["-c", "echo hi > /mnt/data/f"]))
    with reader.files.download("/data/f") as stream:
        assert stream.read() == b"hi\n"

    assert reader.detach_disk(DetachDiskOptions(disk_id=disk.id, mount_path="/data"))
    writer.destroy()
    reader.destroy()
    writer.wait_until_destroyed()
    assert createos_sdk.disks.delete("shared-data")
