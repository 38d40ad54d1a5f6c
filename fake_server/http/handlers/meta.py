"""Handlers for the account-independent and identity routes: health, catalog, whoami."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, WORLD_KEY
from fake_server.http.wire.common import query_int
from fake_server.http.wire.sandboxes import stats_json
from fake_server.models.paging import page

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["health", "list_rootfs", "list_shapes", "readiness", "whoami"]


async def health(request: web.Request) -> web.Response:
    return ok({"up": True})


async def readiness(request: web.Request) -> web.Response:
    data = {"ready": True, "reason": "", "scheduler_last_ok_ms_ago": 0}
    return ok(data)


async def list_shapes(request: web.Request) -> web.Response:
    shapes = list(request.app[WORLD_KEY].ctx.catalog.shapes.values())
    shown, pagination = page(
        shapes, query_int(request, "limit", 50), query_int(request, "offset", 0)
    )
    data = {
        "data": [
            {
                "id": s.id,
                "vcpu": s.vcpu,
                "mem_mib": s.mem_mib,
                "default_disk_mib": s.default_disk_mib,
                "cpu_quota_pct": s.cpu_quota_pct,
            }
            for s in shown
        ],
        "pagination": pagination,
    }
    return ok(data)


async def list_rootfs(request: web.Request) -> web.Response:
    catalog = request.app[WORLD_KEY].ctx.catalog
    entries = [
        {"name": e.name, "description": e.description, "deprecated": e.deprecated}
        | ({"successor": e.successor} if e.successor is not None else {})
        for e in catalog.rootfs.values()
    ]
    data = {"rootfs": list(catalog.rootfs), "default": catalog.default_rootfs, "entries": entries}
    return ok(data)


async def whoami(request: web.Request) -> web.Response:
    account = request[BACKEND_KEY]
    return ok(stats_json(account.id, account.whoami()))
