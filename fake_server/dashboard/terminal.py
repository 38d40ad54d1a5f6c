"""The dashboard's terminal: ``GET /_fake/ui/api/sandboxes/{id}/shell``, a WebSocket into a
sandbox's login shell with the frames of ``…/shell-ws`` (``http.streams.shell_frames``).

The browser never holds an account's API key, so the shell is opened in-process for the
sandbox's own account, through the same relay as ``…/shell-ws``. The dashboard's session
cookie (checked before this handler) and an ``Origin`` naming the dashboard itself are
required: browsers send cookies with cross-site WebSocket upgrades, so the ``Origin`` check
is what stops another site from hijacking the terminal.
"""

from __future__ import annotations

from aiohttp import web

from fake_server.dashboard.security import same_origin
from fake_server.http.handlers.shells import MAX_FRAME, relay_shell
from fake_server.http.keys import STATE_KEY
from fake_server.http.wire.common import query_int
from fake_server.models import ApiError

__all__ = ["CLOSED_BASE", "terminal"]

#: A shell that cannot open (a paused sandbox: 409) closes the socket with 4000 + the status.
CLOSED_BASE = 4000


def _fail(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def terminal(request: web.Request) -> web.StreamResponse:
    """Open the sandbox's shell for its own account and relay it to the browser."""
    if "Origin" not in request.headers or not same_origin(request):
        return _fail(403, "refused: the terminal opens only from the dashboard's own pages")
    ws = web.WebSocketResponse(max_msg_size=MAX_FRAME, autoping=True)
    if not ws.can_prepare(request).ok:
        return _fail(426, "the terminal expects a WebSocket upgrade")
    world = request.app[STATE_KEY].world
    found = world.find_sandbox(request.match_info["sandbox_id"])
    account = next((a for a in world.accounts.values() if found and a.id == found.account_id), None)
    if found is None or account is None:
        return _fail(404, "no sandbox has this id")
    try:
        shell = account.processes.open_shell(
            found.id, query_int(request, "rows", 24), query_int(request, "cols", 80)
        )
    except ApiError as exc:
        if exc.field:  # a bad size: the page's mistake, answered as HTTP
            return _fail(exc.status, f"{exc.field}: {exc.message}")
        # The sandbox's state (paused): upgraded, then closed saying why, since a browser
        # shows a page no HTTP answer to a socket.
        await ws.prepare(request)
        await ws.close(code=CLOSED_BASE + exc.status, message=exc.message.encode()[:120])
        return ws
    await ws.prepare(request)
    await relay_shell(ws, account, found.id, shell, world.ctx.clock)
    return ws
