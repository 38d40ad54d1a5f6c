"""Per-request stream writers (NDJSON frames, raw bodies): the seam faults wrap to cut,
stall, corrupt or duplicate what a client receives."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web

from fake_server.http.keys import ANNOUNCED_KEY, STREAM_KEY, STREAM_WRAPPERS_KEY, WORLD_KEY
from fake_server.http.recorder import TALLY_KEY, Tally

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Iterator, Mapping

    from fake_server.clock import Clock

__all__ = [
    "LARGE_JSON",
    "WRITE",
    "BodyWriter",
    "FrameWriter",
    "json_pieces",
    "open_body",
    "open_ndjson",
    "stream_json",
    "stream_ndjson",
]

#: Bytes written to a connection at a time (an HTTP/2 stream's channel takes at most this
#: many at once).
WRITE = 64 * 1024
#: Characters of strings past which a JSON reply is written in pieces (``stream_json``).
LARGE_JSON = 1024 * 1024
#: Characters of a string encoded at a time.
_PIECE = 64 * 1024

_T = TypeVar("_T")


class _Counted:
    """For a clock-aware client, every write is counted in transit (its byte count) until the
    client reports it read those bytes, so a virtual clock never jumps over bytes on the wire.
    Nothing is announced before a wait: a fault stalls before it calls the inner writer."""

    def __init__(
        self,
        response: web.StreamResponse,
        clock: Clock | None = None,
        exchange: str | None = None,
        tally: Tally | None = None,
    ) -> None:
        self.response = response
        self._clock = clock
        self._exchange = exchange
        self._tally = tally

    async def _send(self, data: bytes) -> None:
        if self._clock is not None and data:
            self._clock.response_sent(self._exchange, len(data))
        await self.response.write(data)
        if self._tally is not None:
            self._tally.add(data)


class FrameWriter(_Counted):
    """Writes one JSON object per line."""

    async def write_frame(self, frame: Mapping[str, Any]) -> None:
        await self.write_line(json.dumps(frame, separators=(",", ":")).encode() + b"\n")

    async def write_line(self, line: bytes) -> None:
        """Raw bytes, for faults that send malformed lines."""
        await self._send(line)


class BodyWriter(_Counted):
    """Writes raw body bytes (file downloads)."""

    async def write(self, data: bytes) -> None:
        await self._send(data)


def _wrap(request: web.Request, writer: Any) -> Any:
    for wrapper in request.get(STREAM_WRAPPERS_KEY, []):
        writer = wrapper(writer)
    request[STREAM_KEY] = writer
    return writer


def _announced(request: web.Request) -> tuple[Clock | None, str | None]:
    exchange = request.get(ANNOUNCED_KEY)
    return (request.app[WORLD_KEY].ctx.clock, exchange) if exchange else (None, None)


async def open_ndjson(request: web.Request) -> tuple[web.StreamResponse, Any]:
    """Start a 200 NDJSON response; returns it and the (possibly wrapped) frame writer."""
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)  # its head is counted in transit by ``reply_head``
    tally = request[TALLY_KEY] = Tally("ndjson")
    return response, _wrap(request, FrameWriter(response, *_announced(request), tally))


async def open_body(request: web.Request, length: int) -> tuple[web.StreamResponse, Any]:
    """Start a 200 octet-stream response of ``length`` bytes; returns it and its writer."""
    response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
    response.content_length = length
    await response.prepare(request)  # its head is counted in transit by ``reply_head``
    tally = request[TALLY_KEY] = Tally("binary")
    return response, _wrap(request, BodyWriter(response, *_announced(request), tally))


async def stream_ndjson(
    request: web.Request,
    items: AsyncGenerator[_T, None],
    render: Callable[[_T], Mapping[str, Any]],
) -> web.StreamResponse:
    """Send every item of ``items`` as one NDJSON frame; a client that goes away ends it.

    ``items`` is closed in every case, so the model's generator cleans up.
    """
    async with contextlib.aclosing(items):
        response, writer = await open_ndjson(request)
        with contextlib.suppress(ConnectionResetError):
            async for item in items:
                await writer.write_frame(render(item))
    return response


def json_pieces(value: Any) -> Iterator[str]:
    """``json.dumps(value)`` (``web.json_response``'s format) in pieces: a long string is
    escaped a slice at a time, so no one step holds the loop for long."""
    if isinstance(value, str) and len(value) > _PIECE:
        yield '"'
        for start in range(0, len(value), _PIECE):
            yield json.dumps(value[start : start + _PIECE])[1:-1]
        yield '"'
    elif isinstance(value, dict):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            yield f"{', ' if index else ''}{json.dumps(str(key))}: "
            yield from json_pieces(item)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for index, item in enumerate(value):
            if index:
                yield ", "
            yield from json_pieces(item)
        yield "]"
    else:
        yield json.dumps(value)


async def stream_json(request: web.Request, data: Mapping[str, Any]) -> web.StreamResponse:
    """A 200 JSON reply written in pieces as the client takes them: encoding a 10 MiB
    string at once holds the loop (and every other request) for a tenth of a second and
    more. Fault stream wrappers do not apply (it is not a stream of the API's); the journal
    keeps its size (``<json, N bytes>``)."""
    response = web.StreamResponse(headers={"Content-Type": "application/json; charset=utf-8"})
    await response.prepare(request)
    tally = request[TALLY_KEY] = Tally("json")
    writer = BodyWriter(response, *_announced(request), tally)
    pending: list[str] = []
    size = 0
    with contextlib.suppress(ConnectionResetError):
        for piece in json_pieces(data):
            pending.append(piece)
            size += len(piece)
            if size >= _PIECE:
                await _write(writer, "".join(pending).encode())
                pending, size = [], 0
        await _write(writer, "".join(pending).encode())
    return response


async def _write(writer: BodyWriter, data: bytes) -> None:
    for start in range(0, len(data), WRITE):
        await writer.write(data[start : start + WRITE])
