"""The real API's JSend envelopes: ``ok`` for success, ``error_response`` for an ``ApiError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.http.wire import success

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fake_server.models import ApiError

__all__ = ["envelope", "error_response", "ok"]


def ok(
    data: Mapping[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """``{"status": "success", "data": data}``."""
    return web.json_response(success(data), status=status, headers=headers)


def envelope(error: ApiError) -> dict[str, Any]:
    if error.status >= 500:
        return {"status": "error", "code": error.code, "message": error.message}
    if error.field is not None:
        return {"status": "fail", "data": {error.field: error.message}}
    return {"status": "fail", "data": {"code": error.code, "message": error.message}}


def error_response(error: ApiError) -> web.Response:
    return web.json_response(envelope(error), status=error.status, headers=error.headers)
