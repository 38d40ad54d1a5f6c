"""Rendering ``ApiError`` as the real API's JSend envelopes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from fake_server.models import ApiError

__all__ = ["envelope", "error_response"]


def envelope(error: ApiError) -> dict[str, Any]:
    if error.status >= 500:
        return {"status": "error", "code": error.code, "message": error.message}
    if error.field is not None:
        return {"status": "fail", "data": {error.field: error.message}}
    return {"status": "fail", "data": {"code": error.code, "message": error.message}}


def error_response(error: ApiError) -> web.Response:
    return web.json_response(envelope(error), status=error.status, headers=error.headers)
