"""A process's standard input: whole bytes for ``/exec``, a live pipe for managed processes."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

__all__ = ["BytesSource", "ProcessSignal", "StdinPipe", "StdinSource"]


class ProcessSignal(Exception):
    """A signal ended the process; ``signal`` is its name, e.g. ``"SIGKILL"``."""

    def __init__(self, signal: str) -> None:
        super().__init__(f"process ended by {signal}")
        self.signal = signal


class StdinSource(Protocol):
    async def read_chunk(self) -> bytes:
        """The next chunk, or ``b""`` at end of input."""
        ...


class BytesSource:
    """All of stdin known up front (buffered ``/exec``)."""

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = bytes(data)

    async def read_chunk(self) -> bytes:
        data, self._data = self._data, None
        return data or b""


class StdinPipe:
    """Live stdin for a managed process: written by ``POST /input``, closed by ``/stdin/close``.

    Use it from the event loop that runs the process. Writes are buffered without limit (the
    API caps each request); the reader sees them in order and then end of input once closed.
    """

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._closed = False
        self._changed = asyncio.Event()
        self._written = 0

    def write(self, data: bytes) -> None:
        """Queue ``data``; raises ``BrokenPipeError`` once the pipe is closed."""
        if self._closed:
            raise BrokenPipeError("stdin is closed")
        if data:
            self._chunks.append(bytes(data))
            self._written += len(data)
            self._changed.set()

    def close(self) -> None:
        """End of input; closing twice is harmless."""
        self._closed = True
        self._changed.set()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def bytes_written(self) -> int:
        return self._written

    @property
    def pending(self) -> int:
        """Bytes written and not yet read: what a flood of input has piled up."""
        return sum(len(chunk) for chunk in self._chunks)

    async def read_chunk(self) -> bytes:
        while not self._chunks:
            if self._closed:
                return b""
            self._changed.clear()
            await self._changed.wait()
        return self._chunks.popleft()
