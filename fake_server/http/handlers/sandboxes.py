"""Handlers for sandbox lifecycle routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, STATE_KEY, sandbox_id
from fake_server.http.wire.common import query_int, read_json
from fake_server.http.wire.sandboxes import parse_create_sandbox, sandbox_json, sandbox_page

if TYPE_CHECKING:
    from aiohttp import web

__all__ = [
    "create_sandbox",
    "delete_sandbox",
    "get_sandbox",
    "list_sandboxes",
    "origin",
    "pause_sandbox",
    "resume_sandbox",
]

#: Seconds a client should wait before polling a transition. No official client reads it; it is
#: kept on the 200 reply of a transition that started, where it costs nothing (docs/fidelity.md).
POLL_AFTER = "1"


def origin(request: web.Request) -> str:
    """The preview port's origin (its bound address, not the Host header) for preview URLs."""
    return request.app[STATE_KEY].preview_origin()


async def create_sandbox(request: web.Request) -> web.Response:
    spec = parse_create_sandbox(await read_json(request))
    sandbox = request[BACKEND_KEY].create_sandbox(spec)
    await sandbox.until_created()  # the service answers once the sandbox is running
    return ok(sandbox_json(sandbox, origin(request)))


async def list_sandboxes(request: web.Request) -> web.Response:
    page = request[BACKEND_KEY].list_sandboxes(
        status=request.query.get("status") or None,
        limit=query_int(request, "limit", 50),
        offset=query_int(request, "offset", 0),
    )
    return ok(sandbox_page(page, origin(request)))


async def get_sandbox(request: web.Request) -> web.Response:
    sandbox = request[BACKEND_KEY].get_sandbox(sandbox_id(request))
    return ok(sandbox_json(sandbox, origin(request)))


async def delete_sandbox(request: web.Request) -> web.Response:
    sandbox = request[BACKEND_KEY].delete_sandbox(sandbox_id(request))
    return ok({"id": sandbox.id, "status": sandbox.status})


async def pause_sandbox(request: web.Request) -> web.Response:
    sandbox, started = request[BACKEND_KEY].pause_sandbox(sandbox_id(request))
    return _transition(sandbox_json(sandbox, origin(request)), started)


async def resume_sandbox(request: web.Request) -> web.Response:
    sandbox, started = request[BACKEND_KEY].resume_sandbox(sandbox_id(request))
    return _transition(sandbox_json(sandbox, origin(request)), started)


def _transition(data: dict[str, object], started: bool) -> web.Response:
    """200 with the projection in its transitional status, as real clients read it.

    langflow-sandbox-createos accepts only 200 and documents that resume "returns while it is
    still resuming" (docs/fidelity.md, lifecycle replies).
    """
    if not started:
        return ok(data)
    return ok(data, headers={"X-Poll-After": POLL_AFTER})
