"""Handlers for sandbox lifecycle routes."""

from __future__ import annotations

from aiohttp import web

from fake_server.http import wire
from fake_server.http.keys import BACKEND_KEY, FAKE_KEY

__all__ = [
    "create_sandbox",
    "delete_sandbox",
    "get_sandbox",
    "list_sandboxes",
    "origin",
    "pause_sandbox",
    "resume_sandbox",
]

#: Seconds a client should wait before polling a transition, as the docs' header suggests.
POLL_AFTER = "1"


def origin(request: web.Request) -> str:
    """The fake's own origin (its bound address, not the Host header) for preview URLs."""
    return request.app[FAKE_KEY].url


def _sid(request: web.Request) -> str:
    return request.match_info["sandbox_id"]


async def create_sandbox(request: web.Request) -> web.Response:
    spec = wire.parse_create_sandbox(await wire.read_json(request))
    sandbox = request[BACKEND_KEY].create_sandbox(spec)
    await sandbox.until_created()  # the service answers once the sandbox is running
    return web.json_response(wire.success(wire.sandbox_json(sandbox, origin(request))))


async def list_sandboxes(request: web.Request) -> web.Response:
    page = request[BACKEND_KEY].list_sandboxes(
        status=request.query.get("status") or None,
        limit=wire.query_int(request, "limit", 50),
        offset=wire.query_int(request, "offset", 0),
    )
    return web.json_response(wire.success(wire.sandbox_page(page, origin(request))))


async def get_sandbox(request: web.Request) -> web.Response:
    sandbox = request[BACKEND_KEY].get_sandbox(_sid(request))
    return web.json_response(wire.success(wire.sandbox_json(sandbox, origin(request))))


async def delete_sandbox(request: web.Request) -> web.Response:
    sandbox = request[BACKEND_KEY].delete_sandbox(_sid(request))
    return web.json_response(wire.success({"id": sandbox.id, "status": sandbox.status}))


async def pause_sandbox(request: web.Request) -> web.Response:
    sandbox, started = request[BACKEND_KEY].pause_sandbox(_sid(request))
    return _transition(wire.sandbox_json(sandbox, origin(request)), started)


async def resume_sandbox(request: web.Request) -> web.Response:
    sandbox, started = request[BACKEND_KEY].resume_sandbox(_sid(request))
    return _transition(wire.sandbox_json(sandbox, origin(request)), started)


def _transition(data: dict[str, object], started: bool) -> web.Response:
    if not started:
        return web.json_response(wire.success(data))
    return web.json_response(wire.success(data), status=202, headers={"X-Poll-After": POLL_AFTER})
