"""The aiohttp application factory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.http.keys import ERRORS_KEY, FAKE_KEY, WORLD_KEY
from fake_server.http.middlewares import (
    auth_middleware,
    core_middleware,
    not_implemented,
    stamp_request_id,
)
from fake_server.http.routes import ROUTES, UNIMPLEMENTED

if TYPE_CHECKING:
    from collections.abc import Iterable

    from aiohttp.typedefs import Middleware

    from fake_server.server import FakeCreateOS

__all__ = ["CLIENT_MAX_SIZE", "create_app"]

#: For JSON bodies; uploads stream in chunks and are bounded separately.
CLIENT_MAX_SIZE = 64 * 1024 * 1024


def create_app(
    fake: FakeCreateOS, *, extra_middlewares: Iterable[Middleware] | None = None
) -> web.Application:
    """The fake's app: API routes, control routes, and middlewares in a fixed order.

    ``extra_middlewares`` (and ``fake.middlewares``) run after authentication, right before
    the handler: that is where fault injection hooks in.
    """
    from fake_server.control import register_control_routes

    # The fake's own limiter middleware reads ``fake.rate_limit`` per request, so the limit
    # can be changed (or switched off) while serving.
    middlewares: list[Middleware] = [core_middleware, fake.rate_limit_middleware, auth_middleware]
    middlewares.extend(fake.middlewares)
    middlewares.extend(extra_middlewares or ())
    app = web.Application(middlewares=middlewares, client_max_size=CLIENT_MAX_SIZE)
    app[WORLD_KEY] = fake.world
    app[ERRORS_KEY] = fake.errors
    app[FAKE_KEY] = fake
    app.on_response_prepare.append(stamp_request_id)
    for method, path, operation, handler in ROUTES:
        app.router.add_route(method, path, handler, name=operation)
    for method, path, real_name in UNIMPLEMENTED:
        app.router.add_route(method, path, not_implemented, name=f"not_implemented:{real_name}")
    register_control_routes(app, fake)
    return app
