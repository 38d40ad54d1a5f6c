"""The real API's JSend envelopes: ``ok`` for success, ``error_response`` for an ``ApiError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.http.wire.common import success

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
    """JSend as both SDKs parse it: ``error`` carries a string ``message`` and an integer
    ``code`` (the Python SDK reads ``int(code)`` and drops the message when that fails), the
    fake's snake_case code rides in ``data.code``; ``fail`` carries ``data``, which the SDKs
    join as ``key: value`` pairs (TS reads ``data.code`` as the machine code)."""
    if error.status >= 500:
        return {
            "status": "error",
            "code": error.status,
            "message": error.message,
            "data": {"code": error.code},
        }
    if error.field is not None:
        return {"status": "fail", "data": {error.field: error.message}}
    return {"status": "fail", "data": {"code": error.code, "message": error.message}}


def error_response(error: ApiError) -> web.Response:
    return web.json_response(envelope(error), status=error.status, headers=error.headers)
