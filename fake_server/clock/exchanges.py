"""The httpx transport that reports a client's exchanges to the fake's clock (docs/time.md,
rule 3), built by ``transport``'s functions.

Each request opens an exchange (its id in ``EXCHANGE_HEADER``), the reply head and every body
chunk are claimed as they are read, and the exchange closes when the response is closed or the
request fails: never after some real time. A reply that came from somewhere else (a mock
transport under this one, another host) holds nothing once its head is here; one answered
with its body in memory closes its exchange at once.

The synchronous transport also keeps the calling thread ``waiting()`` while it is blocked in
httpx (rule 6), never for the end of a body it has read whole, and claims what arrived only
after it counts as working again, so neither the thread nor the wire lets time move in
between.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import httpx

from fake_server.clock.base import EXCHANGE_HEADER

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

    from fake_server.clock.base import Clock

__all__ = ["ClockTransport"]


class _Exchange(httpx.AsyncByteStream, httpx.SyncByteStream):
    """One reported exchange, and then its response body: each chunk claimed as it is read."""

    def __init__(
        self,
        clock: Clock,
        request: httpx.Request,
        waiting: Callable[[], contextlib.AbstractContextManager[None]],
    ) -> None:
        self._clock = clock
        self._waiting = waiting
        self._id = clock.request_sent()
        if self._id:
            request.headers[EXCHANGE_HEADER] = self._id
        self._inner: httpx.AsyncByteStream | httpx.SyncByteStream | None = None
        self._length: int | None = None  # body bytes the head announced, if it did

    def received(self, response: httpx.Response) -> httpx.Response:
        self._clock.response_received(self._id)  # the head
        if response.is_closed:
            # Answered with its body in memory (``httpx.MockTransport``, respx): nothing of it
            # is on the wire, and nobody will close it again.
            self._clock.exchange_closed(self._id)
            return response
        self._inner, response.stream = response.stream, self
        length = response.headers.get("content-length", "")
        self._length = int(length) if length.isdigit() else None
        return response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert isinstance(self._inner, httpx.AsyncByteStream)
        async for chunk in self._inner:
            self._clock.response_received(self._id, len(chunk))
            yield chunk

    def __iter__(self) -> Iterator[bytes]:
        assert isinstance(self._inner, httpx.SyncByteStream)
        chunks = iter(self._inner)
        left = self._length
        while True:
            if left == 0:
                # The whole body is here: its end takes no wait on the fake, so the thread
                # does not count as waiting for it (time must not move in between).
                chunk = next(chunks, None)
            else:
                with self._waiting():
                    chunk = next(chunks, None)
            if chunk is None:
                return
            self._clock.response_received(self._id, len(chunk))
            if left is not None:
                left = max(0, left - len(chunk))
            yield chunk

    async def aclose(self) -> None:
        try:
            if isinstance(self._inner, httpx.AsyncByteStream):
                await self._inner.aclose()
        finally:
            self.close()

    def close(self) -> None:
        try:
            if isinstance(self._inner, httpx.SyncByteStream):
                self._inner.close()
        finally:
            self._clock.exchange_closed(self._id)


class ClockTransport(httpx.AsyncBaseTransport, httpx.BaseTransport):
    """Wraps an httpx transport (async or sync) and reports every exchange to a clock."""

    def __init__(
        self,
        clock: Clock,
        inner: httpx.AsyncBaseTransport | httpx.BaseTransport,
        waiting: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self._clock = clock
        self._inner = inner
        self._waiting = waiting

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(self._inner, httpx.AsyncBaseTransport)
        exchange = _Exchange(self._clock, request, self._waiting)
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            exchange.close()
            raise
        return exchange.received(response)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(self._inner, httpx.BaseTransport)
        exchange = _Exchange(self._clock, request, self._waiting)
        try:
            with self._waiting():
                response = self._inner.handle_request(request)
        except BaseException:
            exchange.close()
            raise
        return exchange.received(response)

    async def aclose(self) -> None:
        if isinstance(self._inner, httpx.AsyncBaseTransport):
            await self._inner.aclose()

    def close(self) -> None:
        if isinstance(self._inner, httpx.BaseTransport):
            self._inner.close()
