"""What an exec keeps of its command's output: bounded either way.

A buffered exec (``POST …/exec``) answers with the whole output in one JSON reply, so the
fake keeps at most ``BUFFERED_LIMIT`` bytes of each stream; the rest is read (the command
never blocks on a full pipe) and dropped, and the result's ``error`` says how much went,
which both SDKs' strict helpers (TS ``sh()``, Python ``shell()``) raise on. No public source
states a limit of the service's; this one keeps the fake's memory bounded (200 MB of output
once took it to 661 MB) and matches bashkit's own cut of a command's output (10 MiB). A
streamed exec keeps no such limit: its frames wait for the client to take them, and past
``STREAM_BACKLOG`` characters waiting the command waits too, as a program writing to a slow
pipe does.
"""

from __future__ import annotations

import asyncio
import codecs
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["BUFFERED_LIMIT", "STREAM_BACKLOG", "Backlog", "OutputSink", "cut_notice"]

#: Bytes of each stream (stdout, stderr) a buffered exec keeps.
BUFFERED_LIMIT = 10 * 1024 * 1024
#: Characters of streamed output the fake holds for a client before the command waits.
STREAM_BACKLOG = 1024 * 1024


class Backlog:
    """Streamed output not yet taken by the client: ``wait()`` holds the command while it is
    past ``STREAM_BACKLOG``."""

    def __init__(self, limit: int = STREAM_BACKLOG) -> None:
        self._limit = limit
        self.size = 0
        self._room = asyncio.Event()
        self._room.set()

    def added(self, size: int) -> None:
        self.size += size
        if self.size > self._limit:
            self._room.clear()

    def taken(self, size: int) -> None:
        self.size -= size
        if self.size <= self._limit:
            self._room.set()

    async def wait(self) -> None:
        await self._room.wait()


class OutputSink:
    """Collects one output stream as text, decoding UTF-8 across chunk boundaries; keeps at
    most ``limit`` bytes (``dropped`` counts the rest), or hands text to ``emit``."""

    def __init__(
        self,
        emit: Callable[[str], None] | None = None,
        *,
        limit: int | None = None,
        backlog: Backlog | None = None,
    ) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []
        self._emit = emit
        self.limit = limit
        self._room = limit
        self._backlog = backlog
        self.dropped = 0

    async def __call__(self, data: bytes) -> None:
        if self._room is not None:
            if len(data) > self._room:
                self.dropped += len(data) - self._room
                data = data[: self._room]
            self._room -= len(data)
            if not data:
                return
        self._push(self._decoder.decode(data))
        if self._backlog is not None:
            await self._backlog.wait()

    def _push(self, text: str) -> None:
        if not text:
            return
        if self._emit is None:
            self._parts.append(text)
        else:
            self._emit(text)

    def flush(self) -> None:
        self._push(self._decoder.decode(b"", final=True))

    def text(self) -> str:
        self.flush()
        return "".join(self._parts)


def cut_notice(out: OutputSink, err: OutputSink) -> str:
    """What the result's ``error`` says of output a buffered exec dropped (``""``: none)."""
    cut = [(name, sink) for name, sink in (("stdout", out), ("stderr", err)) if sink.dropped]
    if not cut:
        return ""
    names = " and ".join(name for name, _ in cut)
    counts = " and ".join(f"{sink.dropped} {name}" for name, sink in cut)
    return (
        f"{names} passed the {cut[0][1].limit}-byte limit a buffered exec keeps of each "
        f"stream ({counts} bytes dropped); stream the output (stream=true) or write it to "
        "a file"
    )
