"""A preview request forwarded to the sandbox's server over HTTP/1.1 with httpcore, and its
answer relayed back (``ingress``, which imports this at the first preview request).

Hop-by-hop headers, account and control keys and the clock's exchange id are not forwarded;
the server's cookies are kept to its own origin (``preview.scoped_cookie``); an answer ``101``
to an upgrade relays the connection byte for byte (``streams.relay``). Each read from the
server waits at most ``ANSWER_TIMEOUT`` real seconds (504 past it).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import httpcore
from aiohttp import web

from fake_server.clock import EXCHANGE_HEADER
from fake_server.http.handlers.preview import (
    PATH_FORM_CSP,
    scoped_cookie,
)
from fake_server.http.streams.relay import relay, take_over
from fake_server.models.errors import ApiError, BadRequest
from fake_server.operations import CREDENTIAL_HEADERS

if TYPE_CHECKING:
    import socket
    from collections.abc import AsyncIterator

    from fake_server.models.bandwidth import Bandwidth

__all__ = ["ANSWER_TIMEOUT", "forward"]

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


async def forward(
    request: web.Request,
    sock: socket.socket,
    bandwidth: Bandwidth,
    port: int,
    target: str,
    prefix: str | None,
) -> web.StreamResponse:
    """Forward ``request`` to the server on ``port`` over ``sock`` (connected to it), counting
    its bytes on ``bandwidth``; ``target``: the path and query as sent, ``prefix``: the path
    form's, under which its cookies' paths go."""
    reader, writer = await asyncio.open_connection(sock=sock)
    stream = _Stream(reader, writer, bandwidth)
    origin = httpcore.Origin(b"http", b"127.0.0.1", port)
    async with httpcore.AsyncHTTP11Connection(origin, stream) as connection:
        return await _forward(request, connection, port, stream, target, prefix)


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
