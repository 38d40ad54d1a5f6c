"""Handlers for a sandbox's access token: create, read, rotate, revoke."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.http.wire.common import iso

if TYPE_CHECKING:
    from aiohttp import web

    from fake_server.models.sandbox import AccessToken

__all__ = [
    "create_access_token",
    "disable_access_token",
    "get_access_token",
    "rotate_access_token",
]


def _plaintext(token: AccessToken) -> web.Response:
    """The only replies that carry the token itself."""
    data: dict[str, Any] = {
        "token": token.token,
        "enabled": True,
        "created_at": iso(token.created_at),
    }
    if token.rotated_at is not None:
        data["rotated_at"] = iso(token.rotated_at)
    return ok(data)


def _metadata(token: AccessToken | None, *, enabled: bool) -> web.Response:
    data: dict[str, Any] = {"enabled": enabled}
    if token is not None:
        data["token_hint"] = token.hint
        data["created_at"] = iso(token.created_at)
        if token.rotated_at is not None:
            data["rotated_at"] = iso(token.rotated_at)
    return ok(data)


async def create_access_token(request: web.Request) -> web.Response:
    return _plaintext(request[BACKEND_KEY].tokens.create_access_token(sandbox_id(request)))


async def get_access_token(request: web.Request) -> web.Response:
    token = request[BACKEND_KEY].tokens.get_access_token(sandbox_id(request))
    return _metadata(token, enabled=token is not None)


async def rotate_access_token(request: web.Request) -> web.Response:
    return _plaintext(request[BACKEND_KEY].tokens.rotate_access_token(sandbox_id(request)))


async def disable_access_token(request: web.Request) -> web.Response:
    return _metadata(
        request[BACKEND_KEY].tokens.disable_access_token(sandbox_id(request)), enabled=False
    )
