"""Reading a request's body: its bytes must keep coming.

A client that sends a request's head and then stops sending its body would hold its
connection, and the handler waiting for it, for ever (a slowloris on bodies). Every read of
a body waits at most the server's idle timeout (``serve --idle-timeout``, aiohttp's
keep-alive timeout; an in-process fake keeps aiohttp's hour) for its next bytes; past it the
request answers 408 ``request_timeout`` and its connection closes. While a read waits, the
connection counts as waiting on its client (``admission``): when the server runs short of
connections, such connections are the first it closes.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from fake_server.http.admission import waiting_on_client
from fake_server.models import RequestTimeout

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aiohttp import web

__all__ = ["BODY_CHUNK", "body_chunks", "read_some"]

#: Bytes of a streamed body asked for at a time.
BODY_CHUNK = 256 * 1024
#: aiohttp's own keep-alive timeout, for a request whose protocol does not say.
_DEFAULT_STALL = 3630.0


async def read_some(request: web.BaseRequest, limit: int) -> bytes:
    """At most ``limit`` bytes of the body (``b""`` at its end), as soon as some arrive;
    ``RequestTimeout`` when none arrive within the idle timeout."""
    stall = float(getattr(request.protocol, "keepalive_timeout", None) or _DEFAULT_STALL)
    with waiting_on_client(request):
        try:
            async with asyncio.timeout(stall):
                return await request.content.read(limit)
        except TimeoutError:
            if request.protocol is not None:
                request.protocol.close()  # the rest of the body will not come: no keep-alive
            raise RequestTimeout(
                f"the request body stalled: no bytes arrived for {stall:g} s",
                code="request_timeout",
            ) from None


async def body_chunks(request: web.Request, ahead: bytes | None) -> AsyncIterator[bytes]:
    """The body in chunks as it arrives: ``ahead`` (what was read of it already) first."""
    if ahead:
        yield ahead
    while chunk := await read_some(request, BODY_CHUNK):
        yield chunk
