"""Typed aiohttp state keys: app-level (``web.AppKey``) and per-request (``web.RequestKey``).

Fault injection relies on these: ``OPERATION_KEY`` names the operation of every request,
``ACCOUNT_KEY`` holds the account id once authenticated, ``STREAM_WRAPPERS_KEY`` is a list of
callables that wrap the per-request stream writer (``STREAM_KEY``) before the handler uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models import Account, World
    from fake_server.server import FakeCreateOS

__all__ = [
    "ACCOUNT_KEY",
    "ANNOUNCED_KEY",
    "BACKEND_KEY",
    "ERRORS_KEY",
    "FAKE_KEY",
    "OPERATION_KEY",
    "REQUEST_ID_KEY",
    "STREAM_KEY",
    "STREAM_WRAPPERS_KEY",
    "WORLD_KEY",
]

WORLD_KEY: web.AppKey[World] = web.AppKey("fake_server.world")
#: ``(operation, traceback)`` for every unexpected exception inside the fake.
ERRORS_KEY: web.AppKey[list[tuple[str, str]]] = web.AppKey("fake_server.errors")
FAKE_KEY: web.AppKey[FakeCreateOS] = web.AppKey("fake_server.fake")

OPERATION_KEY: web.RequestKey[str] = web.RequestKey("fake_server.operation")
ACCOUNT_KEY: web.RequestKey[str] = web.RequestKey("fake_server.account_id")
BACKEND_KEY: web.RequestKey[Account] = web.RequestKey("fake_server.account")
#: The client announced this request to the shared clock, so replies are counted in transit.
ANNOUNCED_KEY: web.RequestKey[bool] = web.RequestKey("fake_server.announced")
#: The ``X-Request-Id`` every response carries and the journal records.
REQUEST_ID_KEY: web.RequestKey[str] = web.RequestKey("fake_server.request_id")
STREAM_KEY: web.RequestKey[Any] = web.RequestKey("fake_server.stream")
STREAM_WRAPPERS_KEY: web.RequestKey[list[Callable[[Any], Any]]] = web.RequestKey(
    "fake_server.stream_wrappers"
)
