"""Typed aiohttp state keys: app-level (``web.AppKey``) and per-request (``web.RequestKey``),
and the path parameters every sandbox and process route shares.

Fault injection relies on these: ``OPERATION_KEY`` names the operation of every request,
``ACCOUNT_KEY`` holds the account id once authenticated, ``STREAM_WRAPPERS_KEY`` is a list of
callables that wrap the per-request stream writer (``STREAM_KEY``) before the handler uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.faults import Call
    from fake_server.http.state import AppState
    from fake_server.models import Account, World

__all__ = [
    "ACCOUNT_KEY",
    "ANNOUNCED_KEY",
    "BACKEND_KEY",
    "CALL_KEY",
    "ERRORS_KEY",
    "OPERATION_KEY",
    "REQUEST_ID_KEY",
    "STATE_KEY",
    "STREAM_KEY",
    "STREAM_WRAPPERS_KEY",
    "WORLD_KEY",
    "process_ids",
    "sandbox_id",
]

WORLD_KEY: web.AppKey[World] = web.AppKey("fake_server.world")
#: ``(operation, traceback)`` for every unexpected exception inside the fake.
ERRORS_KEY: web.AppKey[list[tuple[str, str]]] = web.AppKey("fake_server.errors")
#: What the app serves: world, errors, faults, rate limiter, control credential.
STATE_KEY: web.AppKey[AppState] = web.AppKey("fake_server.state")

OPERATION_KEY: web.RequestKey[str] = web.RequestKey("fake_server.operation")
#: What the request is (operation, method, path, query, ids), recorded once by the core.
CALL_KEY: web.RequestKey[Call] = web.RequestKey("fake_server.call")
ACCOUNT_KEY: web.RequestKey[str] = web.RequestKey("fake_server.account_id")
BACKEND_KEY: web.RequestKey[Account] = web.RequestKey("fake_server.account")
#: The exchange id a clock-aware client announced (replies are counted in transit), or None.
ANNOUNCED_KEY: web.RequestKey[str | None] = web.RequestKey("fake_server.announced")
#: The ``X-Request-Id`` every response carries and the journal records.
REQUEST_ID_KEY: web.RequestKey[str] = web.RequestKey("fake_server.request_id")
STREAM_KEY: web.RequestKey[Any] = web.RequestKey("fake_server.stream")
STREAM_WRAPPERS_KEY: web.RequestKey[list[Callable[[Any], Any]]] = web.RequestKey(
    "fake_server.stream_wrappers"
)


def sandbox_id(request: web.Request) -> str:
    """The ``{sandbox_id}`` of a sandbox route."""
    return request.match_info["sandbox_id"]


def process_ids(request: web.Request) -> tuple[str, str]:
    """``(sandbox_id, process_id)`` of a process route."""
    return request.match_info["sandbox_id"], request.match_info["process_id"]
