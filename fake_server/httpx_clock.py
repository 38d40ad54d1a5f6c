"""Your own httpx client on the fake's virtual clock: report its exchanges like the provider.

A ``VirtualClock`` jumps only while nothing is on the wire. A client that announces each request
(``request_sent``, its id in the ``X-Fake-Clock-Exchange`` header), claims the reply head and the
body bytes it reads, and closes the exchange when it is done lets a thread-mode fake and the
test's loop share one timeline without depending on real-time slack. The provider reports on
its own; any other ``httpx.AsyncClient`` gets the same with
``transport=clock_transport(fake.clock)``.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from fake_server.clock import EXCHANGE_HEADER
from fake_server.tls import tls_context

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from fake_server.clock import Clock, VirtualClock

__all__ = [
    "ClockTransport",
    "SyncClockTransport",
    "clock_transport",
    "httpx_event_hooks",
    "sync_clock_transport",
]

Hook = Callable[[Any], Awaitable[None]]


class ClockTransport(httpx.AsyncBaseTransport):
    """Wraps an httpx transport and reports every exchange to ``clock``.

    The exchange opens before the request goes out and closes when the response is closed
    (read to the end, or abandoned) or the transport fails: never after some real time.
    """

    def __init__(self, clock: Clock, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._clock = clock
        if transport is None:
            transport = httpx.AsyncHTTPTransport(verify=tls_context())
        self._inner = transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = self._clock.request_sent()
        if not exchange:
            return await self._inner.handle_async_request(request)
        request.headers[EXCHANGE_HEADER] = exchange
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            self._clock.exchange_closed(exchange)
            raise
        self._clock.response_received(exchange)  # the head
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _ClaimedStream(stream, self._clock, exchange)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _ClaimedStream(httpx.AsyncByteStream):
    """A response body that claims each chunk as it is read and closes the exchange."""

    def __init__(self, inner: httpx.AsyncByteStream, clock: Clock, exchange: str) -> None:
        self._inner = inner
        self._clock = clock
        self._exchange = exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._clock.response_received(self._exchange, len(chunk))
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._clock.exchange_closed(self._exchange)


class SyncClockTransport(httpx.BaseTransport):
    """``ClockTransport`` for ``httpx.Client``: also marks the calling thread as waiting.

    A synchronous test attends the clock (``VirtualClock.attend()``): its own code holds time
    still, and only while it is blocked in this transport -- sending, waiting for the reply
    head, reading body bytes -- may time move. It stops waiting before it claims what arrived,
    so there is no moment when neither the thread nor the wire holds the clock.
    """

    def __init__(self, clock: VirtualClock, transport: httpx.BaseTransport | None = None) -> None:
        self._clock = clock
        if transport is None:
            transport = httpx.HTTPTransport(verify=tls_context())
        self._inner = transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        clock = self._clock
        exchange = clock.request_sent()
        if exchange:
            request.headers[EXCHANGE_HEADER] = exchange
        try:
            with clock.waiting():
                response = self._inner.handle_request(request)
        except BaseException:
            clock.exchange_closed(exchange)
            raise
        if not exchange:
            return response
        clock.response_received(exchange)  # the head
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        response.stream = _ClaimedSyncStream(stream, clock, exchange)
        return response

    def close(self) -> None:
        self._inner.close()


class _ClaimedSyncStream(httpx.SyncByteStream):
    """A response body read while waiting, each chunk claimed once the thread runs again."""

    def __init__(self, inner: httpx.SyncByteStream, clock: VirtualClock, exchange: str) -> None:
        self._inner = inner
        self._clock = clock
        self._exchange = exchange

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self._inner)
        while True:
            with self._clock.waiting():
                chunk = next(chunks, None)
            if chunk is None:
                return
            self._clock.response_received(self._exchange, len(chunk))
            yield chunk

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._clock.exchange_closed(self._exchange)


def sync_clock_transport(
    clock: VirtualClock, transport: httpx.BaseTransport | None = None
) -> SyncClockTransport:
    """``transport=`` for an ``httpx.Client`` on ``clock`` (wraps ``transport`` if given)."""
    return SyncClockTransport(clock, transport)


def clock_transport(
    clock: Clock, transport: httpx.AsyncBaseTransport | None = None
) -> ClockTransport:
    """``transport=`` for an ``httpx.AsyncClient`` on ``clock`` (wraps ``transport`` if given)."""
    return ClockTransport(clock, transport)


def httpx_event_hooks(clock: Clock) -> dict[str, list[Hook]]:
    """``event_hooks`` that announce each request and close its exchange at the reply head.

    Coarser than ``clock_transport``: the body is not counted, and an exchange whose request
    fails before any reply closes only when httpx lets go of the request object.
    """

    async def sent(request: httpx.Request) -> None:
        exchange = clock.request_sent()
        if exchange:
            request.headers[EXCHANGE_HEADER] = exchange
            weakref.finalize(request, clock.exchange_closed, exchange)

    async def received(response: httpx.Response) -> None:
        clock.exchange_closed(response.request.headers.get(EXCHANGE_HEADER))

    return {"request": [sent], "response": [received]}
