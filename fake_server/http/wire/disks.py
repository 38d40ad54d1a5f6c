"""Account disks and their attachments on the wire (never a disk's credentials)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http.wire.common import iso

if TYPE_CHECKING:
    from fake_server.models.resources.disks import Attachment, Disk

__all__ = ["attachment_json", "disk_json"]


def disk_json(disk: Disk) -> dict[str, Any]:
    return {
        "id": disk.id,
        "name": disk.name,
        "kind": disk.kind,
        "config": dict(disk.config),
        "created_at": iso(disk.created_at),
    }


def attachment_json(item: Attachment) -> dict[str, Any]:
    data = {
        "disk_id": item.disk.id,
        "name": item.disk.name,
        "kind": item.disk.kind,
        "config": dict(item.disk.config),
        "mount_path": item.mount_path,
        "mount_status": item.status,
    }
    if item.sub_path:
        data["sub_path"] = item.sub_path
    if item.error:
        data["mount_error"] = item.error
    return data
