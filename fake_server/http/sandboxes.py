"""Handlers for sandbox lifecycle routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http import wire
from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, sandbox_id

if TYPE_CHECKING:
    from aiohttp import web

__all__ = [
    "create_sandbox",
    "delete_sandbox",
    "get_sandbox",
    "list_sandboxes",
    "pause_sandbox",
    "resume_sandbox",
]

#: Seconds a client should wait before polling a transition, as the docs' header suggests.
POLL_AFTER = "1"


async def create_sandbox(request: web.Request) -> web.Response:
    spec = wire.parse_create_sandbox(await wire.read_json(request))
    sandbox = request[BACKEND_KEY].create_sandbox(spec)
    return ok(wire.sandbox_json(sandbox), status=201)


async def list_sandboxes(request: web.Request) -> web.Response:
    page = request[BACKEND_KEY].list_sandboxes(
        status=request.query.get("status") or None,
        limit=wire.query_int(request, "limit", 50),
        offset=wire.query_int(request, "offset", 0),
    )
    return ok(wire.sandbox_page(page))


async def get_sandbox(request: web.Request) -> web.Response:
    sandbox = request[BACKEND_KEY].get_sandbox(sandbox_id(request))
    return ok(wire.sandbox_json(sandbox))


async def delete_sandbox(request: web.Request) -> web.Response:
    sandbox = request[BACKEND_KEY].delete_sandbox(sandbox_id(request))
    return ok({"id": sandbox.id, "status": sandbox.status})


async def pause_sandbox(request: web.Request) -> web.Response:
    sandbox, started = request[BACKEND_KEY].pause_sandbox(sandbox_id(request))
    return _transition(wire.sandbox_json(sandbox), started)


async def resume_sandbox(request: web.Request) -> web.Response:
    sandbox, started = request[BACKEND_KEY].resume_sandbox(sandbox_id(request))
    return _transition(wire.sandbox_json(sandbox), started)


def _transition(data: dict[str, object], started: bool) -> web.Response:
    if not started:
        return ok(data)
    return ok(data, status=202, headers={"X-Poll-After": POLL_AFTER})
