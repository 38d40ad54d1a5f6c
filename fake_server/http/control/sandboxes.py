"""The control API's actions on one sandbox, and emptying the journal: what the dashboard's
buttons do, journaled as control-API calls like every other.

* ``POST /_fake/sandboxes/{sandbox_id}/pause``, ``…/resume``, ``…/fork``, ``…/destroy``: the
  API's own transition (``POST …/pause`` and so on, ``DELETE`` for destroy), done for the
  account that owns the sandbox, since the control key acts for every account; the answer is
  the API's. A fork takes the API's optional body.
* ``DELETE /_fake/journal``: forget every journal event (this call's reply is the first one
  kept).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.http.errors import ok
from fake_server.http.handlers import sandbox_admin, sandboxes
from fake_server.http.keys import ACCOUNT_KEY, BACKEND_KEY, WORLD_KEY, sandbox_id
from fake_server.http.routes import CONTROL_PREFIX
from fake_server.models import NotFound

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler


__all__ = ["ACTIONS", "sandbox_control_routes"]


def _for_owner(handler: Handler) -> Handler:
    """``handler`` (an API route's) run as the sandbox's own account."""

    async def as_owner(request: web.Request) -> web.StreamResponse:
        account = request.app[WORLD_KEY].account_of(sandbox_id(request))
        if account is None:
            raise NotFound("no sandbox has this id", code="not_found")
        request[ACCOUNT_KEY] = account.id
        request[BACKEND_KEY] = account
        return await handler(request)

    return as_owner


#: ``action -> (operation, handler)``: the control API's name and the API's own handler.
ACTIONS: dict[str, tuple[str, Handler]] = {
    "pause": ("fake_pause_sandbox", _for_owner(sandboxes.pause_sandbox)),
    "resume": ("fake_resume_sandbox", _for_owner(sandboxes.resume_sandbox)),
    "fork": ("fake_fork_sandbox", _for_owner(sandbox_admin.fork_sandbox)),
    "destroy": ("fake_destroy_sandbox", _for_owner(sandboxes.delete_sandbox)),
}


async def clear_journal(request: web.Request) -> web.Response:
    journal = request.app[WORLD_KEY].ctx.journal
    count = journal.dropped + len(journal)
    journal.clear()
    return ok({"cleared": count})


def sandbox_control_routes() -> list[web.RouteDef]:
    """The routes above (``http.control.api`` serves them with the rest)."""
    p = CONTROL_PREFIX
    routes = [
        web.post(f"{p}/sandboxes/{{sandbox_id}}/{action}", handler, name=operation)
        for action, (operation, handler) in ACTIONS.items()
    ]
    routes.append(web.delete(f"{p}/journal", clear_journal, name="fake_clear_journal"))
    return routes
