"""HTTP/2 in front of the fake's aiohttp app: h2c with prior knowledge on the plain port, h2
where TLS negotiated it by ALPN; HTTP/1.1 (and its Upgrade routes) unchanged.

The TS SDK 0.8 opens a ``node:http2`` session first (h2c with prior knowledge on ``http://``,
ALPN ``h2`` on ``https://``) and falls back to HTTP/1.1 on any error (its ``src/http.ts``); the
service answers it over HTTP/2. aiohttp serves HTTP/1.1 only, so each connection's first bytes
are looked at (``_Sniffer``): the HTTP/2 preface makes it a ``_Front``, anything else goes to
aiohttp's own handler as before. The front speaks HTTP/2 with the ``h2`` library and runs each
stream through the app as one HTTP/1.1 exchange on an in-memory transport (``h2stream``): the
request is written for aiohttp's parser with ``h11``, aiohttp's answer is read back with
``h11`` and sent as HEADERS and DATA frames as it comes, so every middleware, the journal and
the clock see the request as any other, and a streamed exec streams. Upgrade routes (shell,
tunnels, WebSockets) stay HTTP/1.1: HTTP/2 has no ``Upgrade`` (the CLI pins HTTP/1.1 for them).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import TYPE_CHECKING, Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RemoteSettingsChanged,
    RequestReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import H2Error
from h2.settings import SettingCodes

from fake_server.http.admission import Admission
from fake_server.http.connections import WatchedRunner
from fake_server.http.h2encode import AnswerEncoder, RequestDecoder
from fake_server.http.h2stream import Channel, Stream

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.clock import Clock, Hold

__all__ = ["PREFACE", "H2Runner"]

#: What an HTTP/2 client sends first (RFC 9113 §3.4).
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#: Streams a client may have open at once.
MAX_STREAMS = 256
#: Handlers kept between streams, per connection (a connection's usual concurrency).
_IDLE_CHANNELS = 16
#: Real seconds a connection may stay without a stream before the fake ends it (a GOAWAY,
#: then the close). The TS SDK 0.8 opens one session and never closes it, so a Node script
#: using it runs on until the server ends the session (the service's idle timeout is not
#: public). Longer than httpx's 5-second keep-alive, so a pooling client that reads only when
#: it sends drops its connection before a GOAWAY could meet a request already on its way.
IDLE_SECONDS = 10.0
#: aiohttp's own keep-alive timeout, where the fake sets none.
_AIOHTTP_KEEPALIVE = 3630.0
#: No checks or rewriting of fields in ``h2``: outbound ones are aiohttp's, already valid
#: HTTP/1.1 and stripped of the connection-specific ones here; inbound ones are checked where
#: the stream's HTTP/1.1 head is written (``h2stream``: what that head cannot carry resets the
#: stream), which also joins a request's cookie fields into one (what ``h2`` would normalize).
_CONFIG = H2Configuration(
    client_side=False,
    header_encoding=None,
    validate_outbound_headers=False,
    normalize_outbound_headers=False,
    validate_inbound_headers=False,
    normalize_inbound_headers=False,
)


_WINDOWS = (WindowUpdated, RemoteSettingsChanged)


class H2Runner(WatchedRunner):
    """The runner whose connections speak HTTP/1.1 or HTTP/2; ``cleanup`` also ends the HTTP/2
    connections (a GOAWAY first, so no new stream starts while the app shuts down)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fronts: set[_Front] = set()
        #: Connections that have not said yet which protocol they speak (aiohttp does not
        #: know them, so its shutdown would leave their sockets open).
        self._sniffers: set[_Sniffer] = set()

    @property
    def server(self) -> Any:
        inner = super().server
        if inner is None:
            return None
        # aiohttp closes an HTTP/1.1 connection idle this long; a connection that has sent
        # nothing yet, or an HTTP/2 one, is closed by the same rule here.
        idle = float(self._handler_kwargs.get("keepalive_timeout", _AIOHTTP_KEEPALIVE))
        return functools.partial(
            _Sniffer,
            inner,
            self._fronts,
            self._clock,
            idle,
            admission=self.admission,
            sniffers=self._sniffers,
        )

    async def cleanup(self) -> None:
        for front in list(self._fronts):
            front.go_away()
        try:
            await super().cleanup()
        finally:
            for front in list(self._fronts):
                front.close()
            for sniffer in list(self._sniffers):
                sniffer.force_close()


class _Sniffer(asyncio.Protocol):
    """A new connection until its first bytes say which protocol it speaks (closed, as aiohttp
    closes an idle one, if none come within ``idle`` seconds)."""

    def __init__(
        self,
        inner: Callable[[], Any],
        fronts: set[_Front],
        clock: Clock,
        idle: float,
        *,
        admission: Admission,
        sniffers: set[_Sniffer],
    ) -> None:
        self._inner = inner
        self._fronts = fronts
        self._clock = clock
        self._idle = idle
        #: The server's bound on connections: a connection counts from its opening.
        self._admission = admission
        self._sniffers = sniffers
        self._seen = b""
        self._transport: asyncio.Transport | None = None
        self._hold: Hold | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._hold = self._clock.hold()  # a new connection: a request is on its way
        self._timer = asyncio.get_running_loop().call_later(self._idle, transport.close)
        self._sniffers.add(self)
        self._admission.opened(self)
        tls = transport.get_extra_info("ssl_object")
        if tls is not None and tls.selected_alpn_protocol() == "h2":
            self._switch(self._front())

    def _front(self) -> _Front:
        return _Front(self._inner, self._fronts, self._clock, self._idle, self._admission)

    def force_close(self) -> None:
        """Closed to make room for another connection (``admission``)."""
        if self._transport is not None:
            self._transport.close()

    def data_received(self, data: bytes) -> None:
        self._seen += data
        if len(self._seen) < len(PREFACE) and PREFACE.startswith(self._seen):
            return
        self._switch(self._front() if self._seen.startswith(PREFACE) else self._inner())

    def _switch(self, protocol: asyncio.Protocol) -> None:
        transport, seen = self._transport, self._seen
        assert transport is not None
        self._seen = b""
        if self._timer is not None:
            self._timer.cancel()
        self._admission.closed(self)  # the protocol it hands over to counts from here
        self._sniffers.discard(self)
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if seen:
            protocol.data_received(seen)
        self._release()

    def eof_received(self) -> bool | None:
        return None  # nothing was asked yet: close

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._admission.closed(self)
        self._sniffers.discard(self)
        self._release()

    def _release(self) -> None:
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.release()


class _Front(asyncio.Protocol):
    """One HTTP/2 connection: its streams, flow control both ways, and the socket."""

    def __init__(
        self,
        handler: Callable[[], Any],
        fronts: set[_Front],
        clock: Clock,
        idle: float,
        admission: Admission | None = None,
    ) -> None:
        self._handler = handler
        self._idle_wait = min(IDLE_SECONDS, idle)
        #: The server's bound on connections: idle without a stream, served with one.
        self._admission = admission if admission is not None else Admission(lambda: None)
        self._fronts = fronts
        self._clock = clock
        self.conn = H2Connection(_CONFIG)
        self.conn.encoder = AnswerEncoder()
        decoder = self.conn.decoder
        self.conn.decoder = RequestDecoder(
            decoder.max_header_list_size, decoder.max_allowed_table_size
        )
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, Stream] = {}
        self.heads: dict[
            tuple[tuple[tuple[bytes, bytes], ...], bool], tuple[bytes, bool, bool]
        ] = {}
        self.socket_paused = False
        self._receiving = False  # inside data_received: writes wait for its end
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_since = 0.0  # the loop's time when the last stream ended
        self._gone_away = False
        #: Channels between streams, kept for the next ones (at most ``_IDLE_CHANNELS``).
        self._idle: list[Channel] = []
        self._frames = _FrameCounter()
        self._hold: Hold | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._fronts.add(self)
        self._admission.opened(self)
        self._admission.idle(self)
        self._watch_idle()
        self.conn.initiate_connection()
        self.conn.update_settings({SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS})
        self.flush()

    def data_received(self, data: bytes) -> None:
        self._frames.feed(data)
        try:
            events = self.conn.receive_data(data)
        except H2Error:  # a client breaking the protocol: the library wrote a GOAWAY
            self._flush_now()
            self.close()
            return
        self._receiving = True
        try:
            for event in events:
                self._dispatch(event)
        finally:
            self._receiving = False
        self._flush_now()  # what these frames asked for, in one write
        self._watch_clock()

    def _dispatch(self, event: object) -> None:
        if isinstance(event, RequestReceived):
            channel = self._idle.pop() if self._idle else Channel(self, self._handler)
            opened = Stream(self, event.stream_id, channel)
            self.streams[event.stream_id] = opened
            self._admission.serving(self)
            self._watch_idle()
            opened.start(event.headers or [], ended=event.stream_ended is not None)
            return
        stream = self.streams.get(getattr(event, "stream_id", 0))
        if isinstance(event, DataReceived):
            if stream is not None:
                stream.body(event.data, event.flow_controlled_length)
            else:
                with contextlib.suppress(H2Error):
                    self.conn.acknowledge_received_data(
                        event.flow_controlled_length, event.stream_id
                    )
        elif isinstance(event, StreamEnded):
            if stream is not None and not stream.request_ended:
                stream.end_request()
        elif isinstance(event, StreamReset):
            if stream is not None:
                stream.lost(ConnectionResetError("the client reset the stream"))
        elif isinstance(event, WindowUpdated) and event.stream_id:
            if stream is not None and stream.waiting:  # one stream's window (httpx opens
                stream.drain()  # each stream's with one, right after its request's HEADERS)
        elif isinstance(event, _WINDOWS):  # the connection's window, or every stream's
            for stream in [s for s in self.streams.values() if s.waiting]:
                stream.drain()
        elif isinstance(event, ConnectionTerminated):
            self.close()

    def _watch_clock(self) -> None:
        """Hold the clock while a frame is partly received (a request may be on its way)."""
        if self._frames.partial and self._hold is None:
            self._hold = self._clock.hold()
        elif not self._frames.partial and self._hold is not None:
            self._hold.release()
            self._hold = None

    def flush(self) -> None:
        """Send what the connection has to send: at once, or at the end of the frames being
        received (what they ask for then goes out in one write)."""
        if not self._receiving:
            self._flush_now()

    def _flush_now(self) -> None:
        data = self.conn.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def forget(self, stream_id: int) -> None:
        self.streams.pop(stream_id, None)
        if not self.streams:
            self._admission.idle(self)
            self._watch_idle()

    def _watch_idle(self) -> None:
        """End the connection after ``IDLE_SECONDS`` without a stream. The last stream's end
        only notes the time: a timer armed earlier finds, when it fires, how long the
        connection has really been idle and waits the rest (a timer per stream cost more than
        the stream's own frames)."""
        if self.streams or self.transport is None or self._gone_away:
            return
        loop = asyncio.get_running_loop()
        self._idle_since = loop.time()
        if self._idle_timer is None:
            self._idle_timer = loop.call_at(self._idle_since + self._idle_wait, self._end_idle)

    def _end_idle(self) -> None:
        """A GOAWAY first: the client ends the connection itself (Node's session closes, and a
        pooling client such as httpx sees it readable and opens a new one), with no request
        racing a closed socket; whatever is still open ``IDLE_SECONDS`` later is closed."""
        self._idle_timer = None
        if self.streams or self.transport is None:
            return  # armed again when the last stream ends
        loop = asyncio.get_running_loop()
        if self._gone_away:
            self.close()
            return
        due = self._idle_since + self._idle_wait
        if loop.time() < due:  # a stream came and went meanwhile
            self._idle_timer = loop.call_at(due, self._end_idle)
            return
        self.go_away()
        self._idle_timer = loop.call_later(self._idle_wait, self._end_idle)

    def release(self, channel: Channel) -> None:
        """A channel whose stream ended cleanly: kept for the next stream, or closed."""
        if channel.reusable() and len(self._idle) < _IDLE_CHANNELS and self.transport is not None:
            channel.recycle()
            self._idle.append(channel)
        else:
            self.discard(channel)

    def discard(self, channel: Channel) -> None:
        """A channel that serves no more streams (its handler loses its connection)."""
        with contextlib.suppress(ValueError):
            self._idle.remove(channel)
        channel.lose(ConnectionResetError("the stream ended"))

    def pause_writing(self) -> None:
        self.socket_paused = True
        for stream in list(self.streams.values()):
            stream.update_pause()

    def resume_writing(self) -> None:
        self.socket_paused = False
        for stream in list(self.streams.values()):
            stream.update_pause()

    def go_away(self) -> None:
        self._gone_away = True
        with contextlib.suppress(H2Error):
            self.conn.close_connection()
        self._flush_now()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def force_close(self) -> None:
        """Closed to make room for another connection (``admission``): only while idle."""
        self.close()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._fronts.discard(self)
        self._admission.closed(self)
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self.transport = None
        if self._hold is not None:
            self._hold.release()
            self._hold = None
        streams, self.streams = self.streams, {}
        for stream in streams.values():
            stream.lost(exc or ConnectionResetError("the connection closed"))
        idle, self._idle = self._idle, []
        for channel in idle:
            channel.lose(exc or ConnectionResetError("the connection closed"))


class _FrameCounter:
    """Where the incoming byte stream is: inside the preface or a frame, or between frames."""

    def __init__(self) -> None:
        self._left = len(PREFACE)  # bytes of the preface, then of the current frame's payload
        self._head = b""  # a frame header received in part

    @property
    def partial(self) -> bool:
        return bool(self._head) or self._left > 0

    def feed(self, data: bytes) -> None:
        at = 0
        while at < len(data):
            if self._left:
                taken = min(self._left, len(data) - at)
                self._left -= taken
                at += taken
                continue
            needed = 9 - len(self._head)
            self._head += data[at : at + needed]
            at += needed
            if len(self._head) == 9:
                self._left = int.from_bytes(self._head[:3], "big")
                self._head = b""
