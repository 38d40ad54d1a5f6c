"""Preview URLs proxied to a server inside the sandbox, on the preview port only
(``handlers.preview``: the path form ``/_ingress/{sandbox}/{port}/{tail}`` and the hostname form
``{ulid}-{port}.localhost``). On the API's port ``/_ingress/…`` answers ``307`` to the same
path on the preview port, so nothing a sandbox serves ever shares the dashboard's origin.

The connection is made by the sandbox's runtime (``Machine.connect``): on the process runtime
a socket created inside the sandbox's network namespace, so no host port is opened, sandboxes
never collide and nothing in a sandbox can reach the host through it. HTTP/1.1 is spoken
over it with httpcore (``ingress_proxy``, imported at the first preview request: a fake whose
sandboxes serve nothing never loads it); one connection per request, ``Connection: close``;
status, headers and body pass through as they are, the body streamed both ways. Request
bytes count as the sandbox's ingress, response bytes as its egress (``Bandwidth``).

A request asking for an upgrade (``Connection: Upgrade`` with ``Upgrade``, as a WebSocket
handshake) keeps both headers; a server that answers ``101`` gets the connection relayed byte
for byte both ways until either side closes (``streams.relay``); any other answer passes through
as usual. The handshake itself is the server's business (a bad ``Sec-WebSocket-Key`` gets
whatever the server answers), and like every preview request it needs no API key.

Waiting on the server is real time, as every wait on a real program (the service's own
timeout is not documented): a server that accepts and never answers gets a 504 after
``ingress_proxy.ANSWER_TIMEOUT`` seconds without a byte from it.
"""

from __future__ import annotations

from aiohttp import web

from fake_server.http.handlers.preview import (
    HOST_FORM,
    PREVIEW_APP_KEY,
    browser_navigation,
    hostname_form,
)
from fake_server.http.keys import STATE_KEY, WORLD_KEY, sandbox_id
from fake_server.models.errors import ApiError, BadGateway
from fake_server.models.ingress import not_listening, preview
from fake_server.runtime.api import FeatureUnavailable

__all__ = ["ingress", "nowhere"]


async def ingress(request: web.Request) -> web.StreamResponse:
    """A preview URL; public (no API key), as in the service. On the API's port: moved."""
    if not request.app.get(PREVIEW_APP_KEY, False):
        return _moved(request)
    sandbox, port = preview(request.app[WORLD_KEY], sandbox_id(request), request.match_info["port"])
    # The hostname form arrives as its path form too (``preview.as_path_form``).
    parts = request.rel_url.raw_path.split("/", 4)  # ['', '_ingress', id, port, tail], as sent
    query = request.rel_url.raw_query_string
    target = "/" + (parts[4] if len(parts) > 4 else "") + (f"?{query}" if query else "")
    prefix: str | None = None  # the path form's, as sent: its cookies' paths go under it
    if request.match_info.route.name != HOST_FORM:
        prefix = "/".join(parts[:4])
        if browser_navigation(request):
            location = hostname_form(request.url, sandbox.id, port, target)
            if location is not None:
                return web.Response(status=307, headers={"Location": location})
    try:
        sock = await sandbox.machine.connect(port)
    except FeatureUnavailable as exc:  # no network shared with its servers (not root)
        raise BadGateway(str(exc)) from None
    except OSError:
        raise not_listening(port) from None
    from fake_server.http.handlers.ingress_proxy import forward

    return await forward(request, sock, sandbox.bandwidth, port, target, prefix)


def _moved(request: web.Request) -> web.StreamResponse:
    """``/_ingress/…`` on the API's port: the same URL on the preview port."""
    origin = request.app[STATE_KEY].preview_origin()
    if not origin:
        raise ApiError("this fake serves no preview URLs", status=404, code="ingress_not_found")
    location = origin + request.rel_url.raw_path_qs
    return web.Response(status=307, headers={"Location": location})


async def nowhere(request: web.Request) -> web.StreamResponse:
    """Any other request on the preview port: neither form of a preview URL."""
    raise ApiError(
        "no preview URL here: the preview port serves /_ingress/{sandbox_id}/{port}/… and "
        "http://{id without sb-}-{port}.localhost:{preview port}/…",
        status=404,
        code="ingress_not_found",
    )
