"""A web dashboard of a running fake at ``/_fake/ui/``: sandboxes, processes, the journal,
faults and account resources, updated live over Server-Sent Events.

The dashboard is not part of the API: its requests skip the journal, the rate limit and fault
injection (``dashboard_middleware`` runs first and hands them straight to their handler), so
watching the fake changes nothing a client or a test sees. It reads the state through the
models, the journal and ``Faults``, as the control API does. Plain HTML, CSS and JavaScript
modules under ``static/``, no build step.
"""

from __future__ import annotations

import functools
import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.dashboard.actions import action_routes, as_control_call
from fake_server.dashboard.handlers import HUB_KEY, ROWS_KEY, SESSIONS_KEY, api_routes, fail
from fake_server.dashboard.journal_rows import EntryIndex
from fake_server.dashboard.live import Hub
from fake_server.dashboard.security import (
    SECURITY_HEADERS,
    Sessions,
    csrf_ok,
    drop_session_cookie,
    key_matches,
    page_policy,
    same_origin,
    set_session_cookie,
)
from fake_server.http.connections import request_finished, request_started
from fake_server.http.handlers.preview import preview_of_host
from fake_server.http.keys import STATE_KEY
from fake_server.http.shared_routes import SharedRoutes, shared_table

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler


__all__ = ["UI_PATH", "dashboard_request", "dashboard_url", "install_dashboard", "is_dashboard"]

#: Where the dashboard lives; its cookie is scoped to this path.
UI_PATH = "/_fake/ui/"
_PREFIX = UI_PATH.rstrip("/")
STATIC = Path(__file__).with_name("static")
_MAX_LOGIN = 4096


def dashboard_url(origin: str, sandbox_id: str | None = None) -> str:
    """The dashboard's address on a fake at ``origin``, on a sandbox's page when given."""
    url = origin + UI_PATH
    return url + f"#/sandbox/{sandbox_id}" if sandbox_id else url


def is_dashboard(path: str) -> bool:
    return path == _PREFIX or path.startswith(UI_PATH)


def dashboard_request(request: web.Request) -> bool:
    """A request the dashboard answers: on the API's port (the preview port has none)."""
    return HUB_KEY in request.app and is_dashboard(request.path)


_NONCE_MARK = "{{style-nonce}}"


@functools.cache
def _page() -> str:
    return (STATIC / "index.html").read_text(encoding="utf-8")


async def index(request: web.Request) -> web.StreamResponse:
    """The page, with a fresh nonce its scripts give the ``<style>`` elements xterm.js makes
    (its theme, cell size and colours); nothing else may add a style."""
    nonce = secrets.token_urlsafe(18)
    response = web.Response(text=_page().replace(_NONCE_MARK, nonce), content_type="text/html")
    response.headers["Content-Security-Policy"] = page_policy(nonce)
    return response


async def to_index(request: web.Request) -> web.StreamResponse:
    return web.Response(status=302, headers={"Location": UI_PATH})


async def login(request: web.Request) -> web.StreamResponse:
    """``{"key": control_key}`` -> a session cookie and the CSRF token for changes."""
    raw = await request.content.read(_MAX_LOGIN + 1)
    try:
        body = json.loads(raw) if len(raw) <= _MAX_LOGIN else None
    except ValueError:
        body = None
    key = body.get("key") if isinstance(body, dict) else None
    if not isinstance(key, str):
        return fail(400, 'send {"key": "<the control key>"}')
    if not key_matches(key, request.app[STATE_KEY].control_key):
        return fail(401, "this is not the fake's control key")
    session, csrf = request.app[SESSIONS_KEY].open()
    response = web.json_response({"csrf": csrf})
    set_session_cookie(response, session, UI_PATH)
    return response


async def logout(request: web.Request) -> web.StreamResponse:
    request.app[SESSIONS_KEY].close(request)
    response = web.json_response({"logged_out": True})
    drop_session_cookie(response, UI_PATH)
    return response


#: Open without a session: the page, login, and the two reads that tell a page it has none.
_OPEN = frozenset(
    {_PREFIX, UI_PATH, UI_PATH + "login", UI_PATH + "api/session", UI_PATH + "api/events"}
)
#: Where the control API's mirrored routes live (``dashboard.actions``).
CONTROL_UI = UI_PATH + "api/control"


def _refusal(request: web.Request) -> web.Response | None:
    """Why the session, CSRF and origin checks refuse a request, as the answer; else None."""
    match = request.match_info
    if match.http_exception is not None:
        return fail(match.http_exception.status, "not a page of the dashboard")
    changes = request.method not in ("GET", "HEAD")
    if changes and not same_origin(request):
        return fail(403, "refused: this change comes from another site")
    path = request.path
    if path not in _OPEN and not path.startswith(UI_PATH + "static/"):
        sessions = request.app[SESSIONS_KEY]
        if sessions.csrf(request) is None:
            return fail(401, "log in with the fake's control key")
        if changes and not csrf_ok(request, sessions):
            return fail(403, "refused: missing or wrong CSRF token")
    return None


@web.middleware
async def dashboard_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Serves the dashboard's own paths apart from the API's middlewares (no journal, rate
    limit or faults), with its security headers on every answer; its actions go on through
    them as the control-API calls they are (``dashboard.actions``)."""
    if not is_dashboard(request.path):
        return await handler(request)
    if preview_of_host(request.headers.get("Host")) is not None:
        # Its cookie would be that preview hostname's, which the sandbox's server receives.
        return fail(404, "the dashboard is not served on a preview hostname")
    request.app[HUB_KEY].start()
    if request.path.startswith(CONTROL_UI + "/") and request.match_info.http_exception is None:
        refused = _refusal(request)
        if refused is not None:
            return refused
        response = await as_control_call(request, CONTROL_UI, handler)
        if not response.prepared:
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
        return response
    request_started(request)
    try:
        try:
            refused = _refusal(request)
            return refused if refused is not None else await request.match_info.handler(request)
        except web.HTTPException as exc:  # aiohttp's own (a file the static route lacks)
            return fail(exc.status, "not a page of the dashboard")
    finally:
        request_finished(request)


async def _prepared(request: web.Request, response: web.StreamResponse) -> None:
    """Every answer of the dashboard (streams and files included) gets the security headers."""
    if is_dashboard(request.path):
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)


def _table(router: web.UrlDispatcher) -> None:
    router.add_routes(
        [
            web.get(_PREFIX, to_index),
            web.get(UI_PATH, index),
            web.post(UI_PATH + "login", login),
            web.post(UI_PATH + "logout", logout),
            web.static(UI_PATH + "static", STATIC / "assets"),
            *api_routes(UI_PATH + "api"),
            *action_routes(CONTROL_UI),
        ]
    )


#: The dashboard's routes, built once per process (``http.shared_routes``).
dashboard_table = shared_table(_table)


def install_dashboard(app: web.Application) -> None:
    """Add the dashboard to the fake's ``app`` (before it starts). Its routes are shared
    between fakes, and its live hub listens to the journal from the first dashboard request
    on: a fake whose dashboard nobody opens pays neither."""
    state = app[STATE_KEY]
    hub = app[HUB_KEY] = Hub(state.world)
    app[SESSIONS_KEY] = Sessions()
    app[ROWS_KEY] = EntryIndex()

    async def stop(_: web.Application) -> None:
        hub.stop()

    app.on_shutdown.append(stop)
    app.on_response_prepare.append(_prepared)
    app.middlewares.insert(0, dashboard_middleware)
    app.router.register_resource(SharedRoutes(dashboard_table(), _PREFIX))
