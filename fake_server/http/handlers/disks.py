"""Handlers for ``/v1/disks`` and a sandbox's ``/disks`` attachments. No reply carries a
disk's credentials."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.http.wire.common import query_int, read_json
from fake_server.http.wire.disks import attachment_json, disk_json
from fake_server.models.paging import page

if TYPE_CHECKING:
    from aiohttp import web

    from fake_server.models.resources.disks import Disks

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


def _paged(request: web.Request, items: list[dict[str, Any]]) -> web.Response:
    chunk, pagination = page(
        items, query_int(request, "limit", 50), query_int(request, "offset", 0)
    )
    return ok({"data": chunk, "pagination": pagination})


async def list_disks(request: web.Request) -> web.Response:
    return _paged(request, [disk_json(d) for d in _disks(request).listing()])


async def create_disk(request: web.Request) -> web.Response:
    request[BACKEND_KEY].require_credit()
    _disks(request).require_configured()
    disk, new = _disks(request).create(await read_json(request))
    return ok(disk_json(disk), status=201 if new else 200)


async def get_disk(request: web.Request) -> web.Response:
    disk = _disks(request).get(request.match_info["disk_id"])
    return ok(disk_json(disk))


async def delete_disk(request: web.Request) -> web.Response:
    disk = _disks(request).delete(request.match_info["disk_id"])
    return ok({"deleted": True, "id": disk.id})


async def rotate_disk_credentials(request: web.Request) -> web.Response:
    _disks(request).require_configured()
    disk = _disks(request).rotate(request.match_info["disk_id"], await read_json(request))
    return ok(disk_json(disk))


async def list_sandbox_disks(request: web.Request) -> web.Response:
    disks = _disks(request)
    disks.require_configured()
    sandbox = request[BACKEND_KEY].get_sandbox(sandbox_id(request))
    return _paged(request, [attachment_json(a) for a in disks.live_attachments(sandbox=sandbox)])


async def attach_disk(request: web.Request) -> web.Response:
    _disks(request).require_configured()
    sid = sandbox_id(request)
    item = _disks(request).attach(sid, await read_json(request))
    return ok({"ok": True, "id": sid, **attachment_json(item)})


async def detach_disk(request: web.Request) -> web.Response:
    sid = sandbox_id(request)
    detached = _disks(request).detach(
        sid, request.match_info["disk_id"], request.query.get("mount_path", "")
    )
    return ok({"detached": detached, "id": sid})
