"""Handlers for ``/v1/networks`` and a sandbox's ``/networks`` attachments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http import wire
from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.models.resource_base import page

if TYPE_CHECKING:
    from aiohttp import web

    from fake_server.models.networks import Network, Networks

__all__ = [
    "attach_network",
    "create_network",
    "delete_network",
    "detach_network",
    "get_network",
    "list_networks",
    "network_json",
]


def _networks(request: web.Request) -> Networks:
    networks: Networks = request[BACKEND_KEY].resources.networks
    return networks


def network_json(network: Network, *, members: bool = True) -> dict[str, Any]:
    live = network.live_members()
    data: dict[str, Any] = {
        "id": network.id,
        "name": network.name,
        "cidr": str(network.cidr),
        "created_at": wire.iso(network.created_at),
        "member_count": len(live),
    }
    if members:
        data["members"] = [
            {"sandbox_id": m.sandbox.id, "status": m.status, "ip": m.ip, "name": m.sandbox.name}
            for m in live
        ]
    return data


async def list_networks(request: web.Request) -> web.Response:
    items, pagination = page(
        _networks(request).listing(),
        wire.query_int(request, "limit", 50),
        wire.query_int(request, "offset", 0),
    )
    data = {"data": [network_json(n, members=False) for n in items], "pagination": pagination}
    return ok(data)


async def create_network(request: web.Request) -> web.Response:
    request[BACKEND_KEY].require_credit()
    network = _networks(request).create(await wire.read_json(request))
    return ok(network_json(network), status=201)


async def get_network(request: web.Request) -> web.Response:
    network = _networks(request).get(request.match_info["network_id"])
    return ok(network_json(network))


async def delete_network(request: web.Request) -> web.Response:
    network = _networks(request).delete(request.match_info["network_id"])
    return ok({"ok": True, "id": network.id})


async def attach_network(request: web.Request) -> web.Response:
    body = await wire.read_json(request)
    network = _networks(request).attach(sandbox_id(request), body.get("id"))
    return ok({"ok": True, "network": network_json(network)})


async def detach_network(request: web.Request) -> web.Response:
    _networks(request).detach(sandbox_id(request), request.match_info["network_id"])
    return ok({"ok": True})
