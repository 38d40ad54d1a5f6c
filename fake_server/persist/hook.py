"""Where persistence meets the HTTP layer: a middleware that notes what each request may have
changed (written when the loop turn ends) and answers 503, changing nothing, once a shutdown
has begun."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.http.keys import BACKEND_KEY
from fake_server.models.errors import ServiceUnavailable

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

    from fake_server.persist.saver import Saver


__all__ = ["SHUTTING_DOWN", "Gate", "persistence_middleware"]

#: Methods that change nothing a request names (their sandbox's status may settle, though).
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
SHUTTING_DOWN = "createos-fake is shutting down and changed nothing; retry once it has restarted"


class Gate:
    """Once ``closing`` (a stop has begun), lets no request in."""

    def __init__(self) -> None:
        self.closing = False


def persistence_middleware(gate: Gate, saver: Saver) -> Middleware:
    """Runs after authentication (it needs the account) and before fault injection."""

    @web.middleware
    async def persist(request: web.Request, handler: Handler) -> web.StreamResponse:
        if gate.closing:
            raise ServiceUnavailable(SHUTTING_DOWN, code="shutting_down")
        try:
            return await handler(request)
        finally:
            saver.after_request(
                request.get(BACKEND_KEY),
                request.match_info.get("sandbox_id"),
                mutating=request.method not in _SAFE,
            )

    return persist
