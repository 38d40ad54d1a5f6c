"""One HTTP/2 stream of ``h2front``, served by the app as one HTTP/1.1 exchange.

A ``Channel`` is an aiohttp handler of the app's own (the one every HTTP/1.1 connection gets)
on an in-memory transport. A ``Stream`` writes its request into a channel as HTTP/1.1 (its
head written and checked for what HTTP/1.1 cannot carry by ``h2heads``, once per connection
for each head a client repeats; a body of unknown length chunked) and reads aiohttp's answer
back (split by ``h2heads`` when aiohttp wrote it in one piece with its length, else with
aiohttp's own ``HttpResponseParser``), sending its head as HEADERS and its body as DATA frames
as they come, within the client's flow-control windows. A channel serves
one stream at a time and is kept (HTTP/1.1 keep-alive) for the connection's next stream, so a
stream costs no new handler.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp.base_protocol import BaseProtocol
from aiohttp.http import HttpResponseParser
from aiohttp.http_exceptions import HttpProcessingError
from h2.errors import ErrorCodes
from h2.exceptions import H2Error

from fake_server.http.h2heads import HOP, UNFIT, request_head, whole_answer

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp.streams import StreamReader
    from h2.connection import H2Connection

__all__ = ["Channel", "Front", "Stream"]

#: A stream's unsent answer beyond which its handler is told to wait (and below which, again,
#: to go on): the client's flow-control window holds the rest back.
_HIGH, _LOW = 1024 * 1024, 256 * 1024
#: The longest head line aiohttp's response parser takes (aiohttp's own default).
_LINE_LIMIT = 8190
#: Heads written per connection and kept for the streams that repeat them.
_HEADS_KEPT = 64


class Front(Protocol):
    """What a stream uses of its connection (``h2front._Front``)."""

    conn: H2Connection
    transport: asyncio.Transport | None
    socket_paused: bool
    #: Each request head's HTTP/1.1 form, by its fields and whether its stream ended.
    heads: dict[tuple[tuple[tuple[bytes, bytes], ...], bool], tuple[bytes, bool, bool]]

    def flush(self) -> None: ...
    def forget(self, stream_id: int) -> None: ...
    def release(self, channel: Channel) -> None: ...
    def discard(self, channel: Channel) -> None: ...


class Stream:
    """One stream: its request into a channel, the channel's answer out as frames."""

    def __init__(self, front: Front, stream_id: int, channel: Channel) -> None:
        self.front = front
        self.id = stream_id
        self.channel = channel
        channel.stream = self
        self.request_ended = False
        self._chunked = False  # the request's body goes chunked (no content-length)
        self.head_request = False  # its answer has no body
        self._body: StreamReader | None = None  # the answer's body, as aiohttp's parser reads it
        self._pending: deque[bytes] = deque()
        self._pending_bytes = 0
        self._answered = False  # aiohttp's answer ended (EndOfMessage)
        self._finished = False  # the stream ended with the answer or a reset
        self._handler_paused = False
        self._unacked = 0  # request bytes received, acknowledged once the handler reads on

    # -- the request, into aiohttp --------------------------------------------------------------

    def start(self, headers: list[tuple[bytes, bytes]], *, ended: bool) -> None:
        """The request's head, written as HTTP/1.1 (once per connection for each head the
        client repeats); a head HTTP/1.1 cannot carry resets the stream."""
        key = (tuple(headers), ended)
        heads = self.front.heads
        head = heads.get(key)
        if head is None:
            head = request_head(headers, ended=ended)
            if len(heads) < _HEADS_KEPT:
                heads[key] = head
        if head is UNFIT:
            return self.reset(ErrorCodes.PROTOCOL_ERROR)
        request, self._chunked, self.head_request = head
        self.channel.expect(self)
        self._send(request)
        if ended:
            self.end_request()
        return None

    def body(self, data: bytes, flow: int) -> None:
        if data:
            self._send(b"%x\r\n%s\r\n" % (len(data), data) if self._chunked else data)
        if self.channel.reading:
            self._acknowledge(flow)
        else:
            self._unacked += flow  # the handler stopped reading: the client's window closes

    def end_request(self) -> None:
        self.request_ended = True
        if self._chunked:
            self._send(b"0\r\n\r\n")
        self._maybe_done()

    def resumed_reading(self) -> None:
        unacked, self._unacked = self._unacked, 0
        if unacked and not self._finished:
            self._acknowledge(unacked)
            self.front.flush()

    def _acknowledge(self, flow: int) -> None:
        with contextlib.suppress(H2Error):
            self.front.conn.acknowledge_received_data(flow, self.id)

    def _send(self, data: bytes) -> None:
        if not self._finished and not self.channel.closing:
            self.channel.handler.data_received(data)

    # -- the answer, out of aiohttp -------------------------------------------------------------

    def answer(self, data: bytes) -> None:
        if self._finished:
            return
        whole = None if self._body is not None or self.head_request else whole_answer(data)
        if whole is not None:  # the usual answer: aiohttp wrote it at once, with its length
            head, chunk = whole
            self._answered = True
        else:
            try:
                messages, _, _ = self.channel.parser(head=self.head_request).feed_data(data)
            except HttpProcessingError:
                self.reset(ErrorCodes.INTERNAL_ERROR)
                return
            head = None
            for message, reader in messages:
                self._body = reader
                # Plain tuples: the connection's encoder looks fields up by them (``h2encode``).
                head = [(b":status", b"%d" % message.code)]
                head += [
                    (lower, value)
                    for name, value in message.raw_headers
                    if (lower := name.lower()) not in HOP
                ]
            body = self._body
            chunk = b"" if body is None else body.read_nowait()
            if body is not None and body.is_eof():
                self._answered = True
        if head is not None:
            # An answer without a body ends with its HEADERS frame (one frame fewer).
            alone = self._answered and not chunk
            try:
                self.front.conn.send_headers(self.id, head, end_stream=alone)
            except H2Error:
                self.reset(ErrorCodes.INTERNAL_ERROR)
                return
            if alone:
                self._ended()
                self.front.flush()
                return
        if chunk and self._answered and not self._pending:
            # The whole answer at once (the usual one): one DATA frame ends the stream when
            # the windows take it.
            conn = self.front.conn
            try:
                fits = len(chunk) <= min(
                    conn.local_flow_control_window(self.id), conn.max_outbound_frame_size
                )
                if fits:
                    conn.send_data(self.id, chunk, end_stream=True)
            except H2Error:
                fits = False
            if fits:
                self._ended()
                self.front.flush()
                return
        if chunk:
            self._pending.append(chunk)
            self._pending_bytes += len(chunk)
        self.drain()

    @property
    def waiting(self) -> bool:
        """Part of the answer waits for the client's flow-control window."""
        return bool(self._pending)

    def drain(self) -> None:
        """Send what the client's windows allow; the last DATA frame of a complete answer
        ends the stream."""
        conn = self.front.conn
        try:
            while self._pending and not self._finished:
                window = min(conn.local_flow_control_window(self.id), conn.max_outbound_frame_size)
                if window <= 0:
                    break
                chunk = self._pending.popleft()
                if len(chunk) > window:
                    self._pending.appendleft(chunk[window:])
                    chunk = chunk[:window]
                self._pending_bytes -= len(chunk)
                last = self._answered and not self._pending
                conn.send_data(self.id, chunk, end_stream=last)
                if last:
                    self._ended()
            if self._answered and not self._pending and not self._finished:
                conn.end_stream(self.id)  # an answer whose end came after its last bytes
                self._ended()
        except H2Error:  # the client closed or reset the stream meanwhile
            self._pending.clear()
            self._pending_bytes = 0
            self._finish()
            self.front.discard(self.channel)
        self.front.flush()
        self.update_pause()

    def _ended(self) -> None:
        self._finish()
        self._maybe_done()

    def update_pause(self) -> None:
        """The handler waits while the socket cannot take more, or while more than ``_HIGH``
        bytes wait for the client's window (until fewer than ``_LOW`` do)."""
        if self._finished:
            paused = False
        elif self.front.socket_paused:
            paused = True
        else:
            paused = self._pending_bytes > (_LOW if self._handler_paused else _HIGH)
        if paused != self._handler_paused:
            self._handler_paused = paused
            handler = self.channel.handler
            (handler.pause_writing if paused else handler.resume_writing)()

    # -- endings --------------------------------------------------------------------------------

    def _maybe_done(self) -> None:
        """Answered and asked in full: the channel serves the connection's next stream (if
        aiohttp answered before the request's body ended, the channel cannot: it closes)."""
        if self._finished and self._answered and self.channel.stream is self:
            if self.request_ended:
                self.front.release(self.channel)
            else:
                self.front.discard(self.channel)

    def handler_closed(self) -> None:
        """aiohttp closed the channel: its answer is complete, or it gave up on it."""
        if not self._answered:
            self.reset(ErrorCodes.INTERNAL_ERROR)

    @property
    def done(self) -> bool:
        """Asked and answered in full: the channel may serve another stream."""
        return self.request_ended and self._answered

    def reset(self, code: ErrorCodes) -> None:
        if not self._finished:
            with contextlib.suppress(H2Error):
                self.front.conn.reset_stream(self.id, code)
            self.front.flush()
            self._finish()
        self.front.discard(self.channel)

    def lost(self, exc: BaseException) -> None:
        """The client reset the stream or the connection went: the handler loses its
        connection (aiohttp cancels the request's handler)."""
        self._finish()
        self.channel.lose(exc)

    def _finish(self) -> None:
        self._finished = True
        if self._handler_paused:
            self._handler_paused = False
            self.channel.handler.resume_writing()
        self.front.forget(self.id)


class Channel(asyncio.Transport):
    """An aiohttp handler of the app's own and the in-memory transport it writes to."""

    #: No descriptor of its own: its connection is bounded where it is a socket (``admission``).
    in_memory = True

    def __init__(self, front: Front, handler: Callable[[], Any]) -> None:
        super().__init__()
        self._front = front
        self.stream: Stream | None = None
        self.closing = False
        self.reading = True
        loop = asyncio.get_running_loop()
        #: aiohttp's answers, read back: one parser for answers with bodies, kept across
        #: streams; one made for each HEAD request's answer.
        self._reader = BaseProtocol(loop)
        self._parser = self._new_parser(head=False)
        self._head_parser: HttpResponseParser | None = None
        self.handler = handler()
        self.handler.connection_made(self)

    def _new_parser(self, *, head: bool) -> HttpResponseParser:
        return HttpResponseParser(
            self._reader,
            asyncio.get_running_loop(),
            2**16,
            max_line_size=_LINE_LIMIT,
            response_with_body=not head,
            auto_decompress=False,
        )

    def expect(self, stream: Stream) -> None:
        """``stream``'s request goes in next: a HEAD's answer is read by a parser of its own."""
        self._head_parser = self._new_parser(head=True) if stream.head_request else None

    def parser(self, *, head: bool) -> HttpResponseParser:
        return self._head_parser if head and self._head_parser is not None else self._parser

    def reusable(self) -> bool:
        stream = self.stream
        return not self.closing and stream is not None and stream.done

    def recycle(self) -> None:
        self.stream = None

    def lose(self, exc: BaseException) -> None:
        """The handler's connection is gone (told on the loop's next turn, never from inside
        one of its own calls)."""
        if self.closing:
            return
        self.closing = True
        self.stream = None
        asyncio.get_running_loop().call_soon(self.handler.connection_lost, exc)

    # -- asyncio.Transport ----------------------------------------------------------------------

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        transport = self._front.transport
        return default if transport is None else transport.get_extra_info(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.closing and self.stream is not None:
            self.stream.answer(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(bytes(item) for item in list_of_data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        if self.closing:
            return
        self.closing = True
        stream, self.stream = self.stream, None
        if stream is not None:
            stream.handler_closed()
        self._front.discard(self)
        asyncio.get_running_loop().call_soon(self.handler.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        self.close()

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        if not self.reading:
            self.reading = True
            if self.stream is not None:
                self.stream.resumed_reading()

    def is_reading(self) -> bool:
        return self.reading

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass
