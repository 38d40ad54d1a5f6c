"""Handlers for ``/v1/networks`` and a sandbox's ``/networks`` attachments."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.http.wire.common import query_int, read_json
from fake_server.http.wire.networks import network_json
from fake_server.models.paging import page

if TYPE_CHECKING:
    from aiohttp import web

    from fake_server.models.resources.networks import Networks

__all__ = [
    "attach_network",
    "create_network",
    "delete_network",
    "detach_network",
    "get_network",
    "list_networks",
]


def _networks(request: web.Request) -> Networks:
    networks: Networks = request[BACKEND_KEY].resources.networks
    return networks


async def list_networks(request: web.Request) -> web.Response:
    items, pagination = page(
        _networks(request).listing(),
        query_int(request, "limit", 50),
        query_int(request, "offset", 0),
    )
    data = {"data": [network_json(n, members=False) for n in items], "pagination": pagination}
    return ok(data)


async def create_network(request: web.Request) -> web.Response:
    request[BACKEND_KEY].require_credit()
    network = _networks(request).create(await read_json(request))
    return ok(network_json(network), status=201)


async def get_network(request: web.Request) -> web.Response:
    network = _networks(request).get(request.match_info["network_id"])
    return ok(network_json(network))


async def delete_network(request: web.Request) -> web.Response:
    network = _networks(request).delete(request.match_info["network_id"])
    return ok({"ok": True, "id": network.id})


async def attach_network(request: web.Request) -> web.Response:
    body = await read_json(request)
    network = _networks(request).attach(sandbox_id(request), body.get("id"))
    return ok({"ok": True, "network": network_json(network)})


async def detach_network(request: web.Request) -> web.Response:
    _networks(request).detach(sandbox_id(request), request.match_info["network_id"])
    return ok({"ok": True})
