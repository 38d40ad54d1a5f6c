"""Connections whose next request is partly received hold a virtual clock still.

A client that does not report to the clock (curl, the official SDK, a raw socket) may send a
request slowly, in pieces. From the moment a connection opens, or the first byte of a new
request arrives, until the request reaches the fake's middleware (which then holds the clock
busy), the request is provably in flight: the server holds the clock with a ``hold()``. A
connection that closes first lets go. Body bytes of a request being served, or left over from
one, do not count: the handler is busy, or done with them.

Each connection also reports to its server's ``Admission`` (opened, bytes heard, serving or
not, closed), which bounds how many connections the server holds.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from fake_server.http.admission import Admission, Uncounted

if TYPE_CHECKING:
    from fake_server.clock import Clock, Hold

__all__ = ["WatchedRunner", "request_finished", "request_started"]


class _WatchedHandler(RequestHandler):
    """aiohttp's per-connection protocol, telling the clock when a request is on its way."""

    def __init__(
        self, manager: web.Server, *, clock: Clock, admission: Admission, **kwargs: Any
    ) -> None:
        super().__init__(manager, loop=asyncio.get_running_loop(), **kwargs)
        self._clock = clock
        self.admission = admission
        self._receiving: Hold | None = None
        self._serving = 0
        self._payload: Any = None  # the body stream of the last request served

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._start_receiving()  # a new connection: its first request is on its way
        if getattr(transport, "in_memory", False):
            # An HTTP/2 stream's in-memory channel (``h2front``): no descriptor of its own;
            # its connection is counted where it is a socket.
            self.admission = Uncounted()
        self.admission.opened(self)

    def data_received(self, data: bytes) -> None:
        if data and not self._serving and (self._payload is None or self._payload.is_eof()):
            self._start_receiving()
            self.admission.arriving(self)  # a new request's bytes: no longer idle
        else:
            self.admission.heard(self)
        super().data_received(data)
        if self._messages:  # a whole head arrived: served next, never shed meanwhile
            self.admission.serving(self)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._stop_receiving()
        self.admission.closed(self)
        super().connection_lost(exc)

    def started(self, request: web.BaseRequest) -> None:
        self._serving += 1
        self._payload = request.content
        self._stop_receiving()
        self.admission.serving(self)

    def finished(self) -> None:
        self._serving -= 1
        if not self._serving:
            self.admission.idle(self)

    def _start_receiving(self) -> None:
        if self._receiving is None:
            self._receiving = self._clock.hold()

    def _stop_receiving(self) -> None:
        receiving, self._receiving = self._receiving, None
        if receiving is not None:
            receiving.release()


def request_started(request: web.BaseRequest) -> None:
    """The middleware has the request (and holds the clock busy from here on)."""
    protocol = request.protocol
    if isinstance(protocol, _WatchedHandler):
        protocol.started(request)


def request_finished(request: web.BaseRequest) -> None:
    protocol = request.protocol
    if isinstance(protocol, _WatchedHandler):
        protocol.finished()


class WatchedRunner(web.AppRunner):
    """An ``AppRunner`` whose connections report partly received requests to ``clock``.

    ``handler_kwargs`` are the ``RequestHandler`` options also given to the runner;
    ``admission`` bounds its connections (one shared by every runner of a fake: they draw
    on one process's descriptors).
    """

    def __init__(
        self,
        app: web.Application,
        *,
        clock: Clock,
        handler_kwargs: dict[str, Any],
        admission: Admission | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(app, **kwargs, **handler_kwargs)
        self._clock = clock
        self._handler_kwargs = handler_kwargs
        #: Its connections, bounded (``admission``); runners of one fake share one.
        self.admission = admission if admission is not None else Admission()

    @property
    def server(self) -> Any:
        server = super().server
        if server is None:
            return None
        # The protocol factory ``TCPSite`` gives the event loop: one watched handler a connection.
        return functools.partial(
            _WatchedHandler,
            server,
            clock=self._clock,
            admission=self.admission,
            **self._handler_kwargs,
        )
