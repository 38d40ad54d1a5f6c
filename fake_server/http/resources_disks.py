"""Handlers for ``/v1/disks`` and a sandbox's ``/disks`` attachments. No reply carries a
disk's credentials."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http import wire
from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.models.resource_base import page

if TYPE_CHECKING:
    from aiohttp import web

    from fake_server.models.disks import Attachment, Disk, Disks

__all__ = [
    "attach_disk",
    "create_disk",
    "delete_disk",
    "detach_disk",
    "get_disk",
    "list_disks",
    "list_sandbox_disks",
    "rotate_disk_credentials",
]


def _disks(request: web.Request) -> Disks:
    disks: Disks = request[BACKEND_KEY].resources.disks
    return disks


def disk_json(disk: Disk) -> dict[str, Any]:
    return {
        "id": disk.id,
        "name": disk.name,
        "kind": disk.kind,
        "config": dict(disk.config),
        "created_at": wire.iso(disk.created_at),
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


def _paged(request: web.Request, items: list[dict[str, Any]]) -> web.Response:
    chunk, pagination = page(
        items, wire.query_int(request, "limit", 50), wire.query_int(request, "offset", 0)
    )
    return ok({"data": chunk, "pagination": pagination})


async def list_disks(request: web.Request) -> web.Response:
    return _paged(request, [disk_json(d) for d in _disks(request).listing()])


async def create_disk(request: web.Request) -> web.Response:
    request[BACKEND_KEY].require_credit()
    _disks(request).require_configured()
    disk, new = _disks(request).create(await wire.read_json(request))
    return ok(disk_json(disk), status=201 if new else 200)


async def get_disk(request: web.Request) -> web.Response:
    disk = _disks(request).get(request.match_info["disk_id"])
    return ok(disk_json(disk))


async def delete_disk(request: web.Request) -> web.Response:
    disk = _disks(request).delete(request.match_info["disk_id"])
    return ok({"deleted": True, "id": disk.id})


async def rotate_disk_credentials(request: web.Request) -> web.Response:
    _disks(request).require_configured()
    disk = _disks(request).rotate(request.match_info["disk_id"], await wire.read_json(request))
    return ok(disk_json(disk))


async def list_sandbox_disks(request: web.Request) -> web.Response:
    disks = _disks(request)
    disks.require_configured()
    sandbox = request[BACKEND_KEY].get_sandbox(sandbox_id(request))
    return _paged(request, [attachment_json(a) for a in disks.live_attachments(sandbox=sandbox)])


async def attach_disk(request: web.Request) -> web.Response:
    _disks(request).require_configured()
    sid = sandbox_id(request)
    item = _disks(request).attach(sid, await wire.read_json(request))
    return ok({"ok": True, "id": sid, **attachment_json(item)})


async def detach_disk(request: web.Request) -> web.Response:
    sid = sandbox_id(request)
    detached = _disks(request).detach(
        sid, request.match_info["disk_id"], request.query.get("mount_path", "")
    )
    return ok({"detached": detached, "id": sid})
