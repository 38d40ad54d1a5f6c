"""The aiohttp application factories: the API's app and the preview port's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.http.control.api import control_routes
from fake_server.http.fault_middleware import fault_middleware
from fake_server.http.forkgate import fork_gate
from fake_server.http.handlers.ingress import ingress, nowhere
from fake_server.http.handlers.preview import (
    HOST_FORM,
    PREVIEW_APP_KEY,
    PreviewHostResource,
    as_path_form,
)
from fake_server.http.keys import ERRORS_KEY, STATE_KEY, WORLD_KEY
from fake_server.http.middlewares import (
    auth_middleware,
    core_middleware,
    not_implemented,
    rate_limit_middleware,
    reply_head,
)
from fake_server.http.routes import ROUTES, UNIMPLEMENTED
from fake_server.http.shared_routes import SharedRoutes, shared_table

if TYPE_CHECKING:
    from aiohttp.typedefs import Middleware

    from fake_server.http.state import AppState

__all__ = ["CLIENT_MAX_SIZE", "api_table", "create_app", "create_preview_app", "preview_table"]

#: For JSON bodies; uploads stream in chunks and are bounded separately.
CLIENT_MAX_SIZE = 64 * 1024 * 1024


def _app(state: AppState) -> web.Application:
    """An app with the fake's middlewares in their fixed order, serving ``state``.

    Outermost first: core (operation name, journal, clock, envelopes, 500 capture) → auth →
    rate limit (per authenticated account) → the fork gate (``forkgate``) →
    ``state.middlewares`` → faults → handler.
    """
    middlewares: list[Middleware] = [
        core_middleware, auth_middleware, rate_limit_middleware, fork_gate,
    ]  # fmt: skip
    middlewares.extend(state.middlewares)
    middlewares.append(fault_middleware)
    app = web.Application(middlewares=middlewares, client_max_size=CLIENT_MAX_SIZE)
    app[STATE_KEY] = state
    app[WORLD_KEY] = state.world
    app[ERRORS_KEY] = state.errors
    app.on_response_prepare.append(reply_head)
    return app


def _api_table(router: web.UrlDispatcher) -> None:
    for method, path, operation, handler in ROUTES:
        router.add_route(method, path, handler, name=operation)
    for method, path, real_name in UNIMPLEMENTED:
        router.add_route(method, path, not_implemented, name=f"not_implemented:{real_name}")
    router.add_routes(control_routes())


def _preview_table(router: web.UrlDispatcher) -> None:
    host_form = PreviewHostResource(HOST_FORM)
    router.register_resource(host_form)
    host_form.add_route("*", ingress)
    for method, path, operation, handler in ROUTES:
        if operation == "ingress":
            router.add_route(method, path, handler, name=operation)
    router.add_route("*", "/{tail:.*}", nowhere, name="ingress:elsewhere")


#: The API's routes and the preview port's, each built once per process (``shared_routes``).
api_table = shared_table(_api_table)
preview_table = shared_table(_preview_table)


def create_app(state: AppState) -> web.Application:
    """The fake's app: API routes and control routes (``/_ingress/…`` here moves to the
    preview port's app)."""
    app = _app(state)
    app.router.register_resource(SharedRoutes(api_table()))
    return app


def create_preview_app(state: AppState) -> web.Application:
    """The preview port's app (``http.handlers.preview``): the hostname form, the path form,
    and a 404 for anything else; no API, control or dashboard route, whatever the path."""
    app = _app(state)
    app.middlewares.insert(0, as_path_form)
    app[PREVIEW_APP_KEY] = True
    app.router.register_resource(SharedRoutes(preview_table()))
    return app
