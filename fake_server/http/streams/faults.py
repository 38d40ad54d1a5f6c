"""Stream faults: wrappers around the per-request NDJSON/body writers that corrupt what is sent.

The HTTP layer writes every streamed body through one writer per request (``FrameWriter`` with
``write_frame``/``write_line``, ``BodyWriter`` with ``write``) and lets middlewares wrap it
first. A wrapper here counts what passes through and, at the configured point, cuts the body,
stalls, injects a malformed line, duplicates or drops a data frame, or strips the exit status.

A cut ends the handler by raising ``StreamCut`` (a ``ConnectionResetError``, the same thing a
real client disconnect raises mid-write) and asks, through ``on_cut``, for the connection to be
dropped; the fault middleware drops it once the handler has returned, so the handler finishes
(and the journal records its response) the same way on every run, and nothing unexpected is
logged or recorded as an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from typing import TYPE_CHECKING, Any

from fake_server.faults import (
    CutStream,
    DuplicateFrame,
    ExitWithoutStatus,
    MalformedFrame,
    SkipFrame,
    StallStream,
    StreamAction,
    TruncatedDownload,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from aiohttp import web

    from fake_server.clock import Clock

__all__ = ["StreamCut", "drop_connection", "wrap_writer"]

# Real seconds between checks that a stalled-forever client has gone away. Only the fake
# waits here (idle on the clock), so virtual time keeps moving for everybody else.
_DISCONNECT_POLL = 0.005


class StreamCut(ConnectionResetError):
    """Raised into the handler when a stream fault ended the body."""


def drop_connection(request: web.BaseRequest, *, reset: bool) -> None:
    """Close the client's connection: ``reset`` sends a TCP RST, else a clean FIN."""
    transport = request.transport
    if transport is None or transport.is_closing():
        return
    if reset:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):  # a platform without SO_LINGER just closes
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:
        transport.close()


def wrap_writer(
    writer: Any,
    action: StreamAction,
    request: web.BaseRequest,
    clock: Clock,
    on_cut: Callable[[], None],
) -> Any:
    """The wrapper for ``writer`` (a frame or body writer) that applies ``action``.

    ``on_cut`` is called when the connection must be dropped once the handler has returned.
    """
    if hasattr(writer, "write_frame"):
        return _FaultyFrames(writer, action, request, clock, on_cut)
    return _FaultyBody(writer, action, request, clock, on_cut)


class _Faulty:
    def __init__(
        self,
        inner: Any,
        action: StreamAction,
        request: web.BaseRequest,
        clock: Clock,
        on_cut: Callable[[], None],
    ) -> None:
        self.inner = inner
        self.on_cut = on_cut
        self.response: web.StreamResponse = inner.response
        self.action = action
        self.request = request
        self.clock = clock
        self.frames = 0  # frames (or body chunks) written, heartbeats excluded
        self.sent = 0  # body bytes written
        self.done = False  # the one-shot corruption already happened
        self.acted = False  # the action changed what the client receives (the fault fired)
        self.data_frames = 0  # NDJSON ``data`` frames seen, for duplicate/skip

    async def _cut(self, mode: str) -> None:
        self.acted = True
        if mode == "eof" and hasattr(self.inner, "write_frame"):
            await self.response.write_eof()
        else:
            # Mid-body: a FIN after what was written; the client sees an incomplete body.
            self.on_cut()
        raise StreamCut("stream cut by an injected fault")

    async def _stall(self, seconds: float | None) -> None:
        self.acted = True
        if seconds is not None:
            await self.clock.sleep(seconds)
            return
        with self.clock.idle():
            while True:
                transport = self.request.transport
                if transport is None or transport.is_closing():
                    raise StreamCut("client went away while the stream was stalled")
                await asyncio.sleep(_DISCONNECT_POLL)

    async def _before(self, size: int, *, frame: bool = True) -> int:
        """Apply the faults due before a write; returns how many of its bytes may go out.

        ``frame=False`` (a heartbeat or a duplicate) skips the frame-count faults but still
        obeys a byte limit.
        """
        action = self.action
        if (
            isinstance(action, StallStream)
            and frame
            and not self.done
            and self.frames >= action.after_frames
        ):
            self.done = True
            await self._stall(action.seconds)
        if (
            frame
            and isinstance(action, CutStream)
            and action.after_frames is not None
            and self.frames >= action.after_frames
        ):
            await self._cut(action.mode)
        limit = _byte_limit(action)
        if limit is not None:
            return max(0, min(size, limit - self.sent))
        return size

    async def _after_partial(self, allowed: int, size: int) -> None:
        if allowed < size:
            action = self.action
            mode = action.mode if isinstance(action, CutStream) else "reset"
            await self._cut(mode if hasattr(self.inner, "write_frame") else "reset")


def _byte_limit(action: StreamAction) -> int | None:
    if isinstance(action, CutStream):
        return action.after_bytes
    if isinstance(action, TruncatedDownload):
        return action.after_bytes
    return None


class _FaultyFrames(_Faulty):
    """Wraps a ``FrameWriter``: counts frames, heartbeats excluded."""

    async def write_frame(self, frame: Mapping[str, Any]) -> None:
        heartbeat = frame.get("type") == "heartbeat" or frame.get("hb") is True
        action = self.action
        if not heartbeat:
            if (
                isinstance(action, MalformedFrame)
                and not self.done
                and self.frames >= action.after_frames
            ):
                self.done = self.acted = True
                await self._line(action.line.encode("utf-8", "surrogateescape") + b"\n")
            if frame.get("type") == "data":
                self.data_frames += 1
                if isinstance(action, SkipFrame) and self.data_frames == action.frame:
                    self.acted = True
                    return
                if isinstance(action, DuplicateFrame) and self.data_frames == action.frame:
                    self.acted = True
                    await self._frame(frame, count=False)
            if isinstance(action, ExitWithoutStatus) and frame.get("type") == "exit":
                self.acted = True
                frame = {"type": "exit"}
        await self._frame(frame, count=not heartbeat)

    async def write_line(self, line: bytes) -> None:
        await self._line(line)

    async def _frame(self, frame: Mapping[str, Any], *, count: bool) -> None:
        if not count and _byte_limit(self.action) is None:
            # Heartbeats and duplicates pass untouched unless the body is cut at a byte count.
            await self.inner.write_frame(frame)
            return
        line = json.dumps(frame, separators=(",", ":")).encode() + b"\n"
        await self._line(line, count=count)

    async def _line(self, line: bytes, *, count: bool = True) -> None:
        allowed = await self._before(len(line), frame=count)
        if allowed:
            await self.inner.write_line(line[:allowed])
            self.sent += allowed
        if count:
            self.frames += 1
        await self._after_partial(allowed, len(line))


class _FaultyBody(_Faulty):
    """Wraps a ``BodyWriter``: a "frame" is one chunk the handler writes."""

    async def write(self, data: bytes) -> None:
        allowed = await self._before(len(data))
        if allowed:
            await self.inner.write(data[:allowed])
            self.sent += allowed
        self.frames += 1
        await self._after_partial(allowed, len(data))
