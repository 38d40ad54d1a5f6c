"""The dashboard's actions: control-API calls made with the browser's session.

Every change the dashboard makes (arm, disarm or clear faults; reset the fake; clear the
journal; pause, resume, fork or destroy a sandbox) is a route of the control API mirrored
under ``/_fake/ui/api/control/…``: same method, same handler, same operation name. Once the
session, its CSRF token and the origin are checked, the request goes on through the fake's
middlewares as the control-API call it mirrors (``/_fake/…``, with the control key the
browser never holds), so it is journaled like any other call and a test or the journal page
sees what the dashboard did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web
from yarl import URL

from fake_server.http.control.api import reset
from fake_server.http.control.faults import add_faults, clear_faults, remove_fault
from fake_server.http.control.sandboxes import ACTIONS, clear_journal
from fake_server.http.keys import STATE_KEY
from fake_server.http.routes import CONTROL_KEY_HEADER, CONTROL_PREFIX

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler


__all__ = ["action_routes", "as_control_call"]


def action_routes(prefix: str) -> list[web.RouteDef]:
    """The mirrored control routes under ``prefix`` (``/_fake/ui/api/control``); each route's
    name is its operation with ``:ui`` (``http.middlewares.operation_of`` drops it)."""
    routes = [
        web.post(prefix + "/reset", reset, name="fake_reset:ui"),
        web.delete(prefix + "/journal", clear_journal, name="fake_clear_journal:ui"),
        web.post(prefix + "/faults", add_faults, name="fake_add_faults:ui"),
        web.delete(prefix + "/faults", clear_faults, name="fake_clear_faults:ui"),
        web.delete(prefix + "/faults/{fault_id}", remove_fault, name="fake_remove_fault:ui"),
    ]
    routes += [
        web.post(f"{prefix}/sandboxes/{{sandbox_id}}/{action}", handler, name=f"{operation}:ui")
        for action, (operation, handler) in ACTIONS.items()
    ]
    return routes


async def as_control_call(
    request: web.Request, prefix: str, handler: Handler
) -> web.StreamResponse:
    """``request`` (checked) on through the rest of the middlewares as its control-API call."""
    url = request.rel_url
    path = CONTROL_PREFIX + url.raw_path.removeprefix(prefix)
    headers = request.headers.copy()
    headers[CONTROL_KEY_HEADER] = request.app[STATE_KEY].control_key
    moved = URL.build(path=path, query_string=url.raw_query_string, encoded=True)
    return await handler(request.clone(rel_url=moved, headers=headers))
