"""Preview URLs proxied to a server inside the sandbox, on the preview port only
(``handlers.preview``: the path form ``/_ingress/{sandbox}/{port}/{tail}`` and the hostname form
``{ulid}-{port}.localhost``). On the API's port ``/_ingress/…`` answers ``307`` to the same
path on the preview port, so nothing a sandbox serves ever shares the dashboard's origin.

The connection is made by the sandbox's runtime (``Machine.connect``): on the process runtime
a socket created inside the sandbox's network namespace, so no host port is opened, sandboxes
never collide and nothing in a sandbox can reach the host through it. HTTP/1.1 is spoken
over it with httpcore (one connection per request, ``Connection: close``); status, headers
and body pass through as they are, the body streamed both ways. Request bytes count as the
sandbox's ingress, response bytes as its egress (``Bandwidth``).

A request asking for an upgrade (``Connection: Upgrade`` with ``Upgrade``, as a WebSocket
handshake) keeps both headers; a server that answers ``101`` gets the connection relayed byte
for byte both ways until either side closes (``streams.relay``); any other answer passes through
as usual. The handshake itself is the server's business (a bad ``Sec-WebSocket-Key`` gets
whatever the server answers), and like every preview request it needs no API key.

Waiting on the server is real time, as every wait on a real program (the service's own
timeout is not documented): a server that accepts and never answers gets a 504 after
``ANSWER_TIMEOUT`` seconds without a byte from it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import httpcore
from aiohttp import web

from fake_server.clock import EXCHANGE_HEADER
from fake_server.http.handlers.preview import (
    HOST_FORM,
    PATH_FORM_CSP,
    PREVIEW_APP_KEY,
    browser_navigation,
    hostname_form,
    scoped_cookie,
)
from fake_server.http.keys import STATE_KEY, WORLD_KEY, sandbox_id
from fake_server.http.streams.relay import relay, take_over
from fake_server.models.errors import ApiError, BadGateway, BadRequest
from fake_server.models.ingress import not_listening, preview
from fake_server.operations import CREDENTIAL_HEADERS
from fake_server.runtime.api import FeatureUnavailable

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fake_server.models.bandwidth import Bandwidth

__all__ = ["ANSWER_TIMEOUT", "ingress", "nowhere"]

#: Real seconds a preview request waits for each read from the sandbox's server.
ANSWER_TIMEOUT = 60.0
_CHUNK = 64 * 1024
#: Per-connection headers a proxy does not forward (RFC 9110 §7.6.1), in either direction.
_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
     "te", "trailer", "transfer-encoding", "upgrade"}
)  # fmt: skip
#: Account keys, the control key (``operations.CREDENTIAL_HEADERS``) and the clock's exchange
#: id stay out of the sandbox too.
_NOT_FORWARDED = _HOP | CREDENTIAL_HEADERS | {EXCHANGE_HEADER.lower()}


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
    reader, writer = await asyncio.open_connection(sock=sock)
    stream = _Stream(reader, writer, sandbox.bandwidth)
    origin = httpcore.Origin(b"http", b"127.0.0.1", port)
    async with httpcore.AsyncHTTP11Connection(origin, stream) as connection:
        return await _forward(request, connection, port, stream, target, prefix)


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


async def _forward(
    request: web.Request,
    connection: httpcore.AsyncHTTP11Connection,
    port: int,
    stream: _Stream,
    target: str,
    prefix: str | None,
) -> web.StreamResponse:
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED]
    upgrade = _upgrade_of(request)
    if upgrade is not None:
        headers += [("Connection", "Upgrade"), ("Upgrade", upgrade)]
    else:
        headers.append(("Connection", "close"))
    chunked = "chunked" in request.headers.get("Transfer-Encoding", "").lower()
    if chunked:
        headers.append(("Transfer-Encoding", "chunked"))
    timeouts = {"connect": ANSWER_TIMEOUT, "read": ANSWER_TIMEOUT, "write": ANSWER_TIMEOUT}
    try:
        async with connection.stream(
            request.method,
            httpcore.URL(scheme=b"http", host=b"127.0.0.1", port=port, target=target.encode()),
            headers=headers,
            content=_body(request) if chunked or request.content_length else None,
            extensions={"timeout": timeouts},
        ) as answer:
            if answer.status == 101 and upgrade is not None:
                return await _switch(request, answer, stream, prefix)
            return await _relay(request, answer, prefix)
    except httpcore.TimeoutException:
        raise ApiError(
            f"the server on port {port} in the sandbox did not answer within {ANSWER_TIMEOUT:g} s",
            status=504,
        ) from None
    except httpcore.LocalProtocolError:
        raise BadRequest(
            "this request cannot be forwarded as HTTP/1.1 (a header or the path is malformed)",
            code="bad_request",
        ) from None
    except (httpcore.ProtocolError, httpcore.NetworkError):
        raise ApiError(
            f"the server on port {port} in the sandbox closed the connection without a valid "
            "HTTP answer",
            status=502,
        ) from None


def _copy_headers(
    response: web.StreamResponse,
    answer: httpcore.Response,
    prefix: str | None,
    skip: frozenset[str],
) -> None:
    """The server's headers, its cookies kept to its own origin; the path form's answers
    also get ``PATH_FORM_CSP``."""
    for key, value in answer.headers:
        name, text = key.decode("latin-1"), value.decode("latin-1")
        lowered = name.lower()
        if lowered in skip:
            continue
        response.headers.add(name, scoped_cookie(text, prefix) if lowered == "set-cookie" else text)
    if prefix is not None:
        response.headers.add("Content-Security-Policy", PATH_FORM_CSP)


async def _relay(
    request: web.Request, answer: httpcore.Response, prefix: str | None
) -> web.StreamResponse:
    """Stream the server's answer to the client; its headers once, then its body."""
    reason = answer.extensions.get("reason_phrase", b"")
    response = web.StreamResponse(status=answer.status, reason=reason.decode("latin-1") or None)
    _copy_headers(response, answer, prefix, _HOP)
    await response.prepare(request)
    try:
        async for chunk in answer.aiter_stream():
            await response.write(chunk)
    except (httpcore.TimeoutException, httpcore.ProtocolError, httpcore.NetworkError):
        if request.transport is not None:  # cut short: the client must not take it as whole
            request.transport.close()
        return response
    await response.write_eof()
    return response


def _upgrade_of(request: web.Request) -> str | None:
    """The protocol a request asks to switch to (RFC 9110 §7.8), if it asks."""
    tokens = {t.strip().lower() for t in request.headers.get("Connection", "").split(",")}
    upgrade = request.headers.get("Upgrade")
    return upgrade if upgrade and "upgrade" in tokens else None


async def _switch(
    request: web.Request, answer: httpcore.Response, stream: _Stream, prefix: str | None
) -> web.StreamResponse:
    """The server switched protocols: its ``101`` head to the client, then raw bytes."""
    response = web.StreamResponse(status=101)
    _copy_headers(response, answer, prefix, frozenset())
    client = take_over(request)
    try:
        await response.prepare(request)
        if client is not None:
            await relay(client, _Switched(answer.extensions["network_stream"], stream))
    finally:
        if client is not None:
            client.transport.close()
    return response


async def _body(request: web.Request) -> AsyncIterator[bytes]:
    async for chunk in request.content.iter_chunked(_CHUNK):
        yield chunk


class _Stream(httpcore.AsyncNetworkStream):
    """The connection into the sandbox, counting the bytes in each direction."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, bandwidth: Bandwidth
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._bandwidth = bandwidth

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            data = await asyncio.wait_for(self._reader.read(max_bytes), timeout)
        except TimeoutError:
            raise httpcore.ReadTimeout("no answer in time") from None
        except OSError as exc:
            raise httpcore.ReadError(type(exc).__name__) from None
        self._bandwidth.sent(len(data))
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._writer.write(buffer)
            await asyncio.wait_for(self._writer.drain(), timeout)
        except TimeoutError:
            raise httpcore.WriteTimeout("the server stopped reading") from None
        except OSError as exc:
            raise httpcore.WriteError(type(exc).__name__) from None
        self._bandwidth.received(len(buffer))

    def write_eof(self) -> None:
        self._writer.write_eof()

    async def aclose(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("preview URLs speak plain HTTP to the sandbox")

    def get_extra_info(self, info: str) -> Any:
        return self._writer.get_extra_info(info)


class _Switched:
    """The sandbox's end of a switched connection (``relay.SandboxEnd``): read through
    httpcore's stream, which first returns what it read past the ``101`` head."""

    def __init__(self, upgraded: httpcore.AsyncNetworkStream, stream: _Stream) -> None:
        self._upgraded = upgraded
        self._stream = stream

    async def read(self, max_bytes: int) -> bytes:
        try:
            return await self._upgraded.read(max_bytes)
        except httpcore.NetworkError as exc:
            raise ConnectionError(str(exc)) from None

    async def write(self, data: bytes) -> None:
        try:
            await self._stream.write(data)
        except httpcore.NetworkError as exc:
            raise ConnectionError(str(exc)) from None

    def write_eof(self) -> None:
        self._stream.write_eof()
