"""Bounds on what sandboxes hold of the fake's own servers inside their network: the DNS
relay (``resolver``), the metadata endpoint (``metadata``) and each in-guest agent (``agent``).

Each connection or query in flight holds a file descriptor of the fake's process (two for a
relayed one). Without bounds one sandbox could take them all: 300 TCP connections to the DNS
relay held 929 descriptors, a 3 s UDP flood 11,301, and 1,500 connections to an agent gave
thousands of ``EMFILE`` errors and API timeouts for every client. So each server counts what
each sandbox (by its address) holds and what all of them hold together; past either bound a
new connection is closed at once and a new query dropped, as a busy server's are.

``BoundedServer`` accepts a listening socket's connections one at a time, and none while all
sandboxes together hold their bound: more wait in the kernel's queue (the listen backlog),
holding nothing of the fake, and one refused for its sandbox's bound is closed before the next
is accepted. (``asyncio.start_server`` accepts its whole backlog at one turn of the loop and
closes a refused connection turns later: a flood held 80 descriptors that way.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import socket
    from collections.abc import Awaitable, Callable

__all__ = ["BoundedServer", "Caps"]

#: Real seconds an accept that failed (the fake out of descriptors) waits before the next.
_RETRY = 0.1

_K = TypeVar("_K")


class Caps(Generic[_K]):
    """``each`` per key (a sandbox's address), ``total`` for all keys."""

    def __init__(self, each: int, total: int) -> None:
        self.each = each
        self.total = total
        self._held: Counter[_K] = Counter()
        self._sum = 0
        #: How many were refused, for the figures a test reads.
        self.refused = 0

    def take(self, key: _K) -> bool:
        """One more for ``key``, or ``False`` (nothing taken) past a bound."""
        if self._held[key] >= self.each or self._sum >= self.total:
            self.refused += 1
            return False
        self._held[key] += 1
        self._sum += 1
        return True

    def give(self, key: _K) -> None:
        """What ``take`` took goes back."""
        if self._held[key] > 0:
            self._held[key] -= 1
            self._sum -= 1
            if not self._held[key]:
                del self._held[key]

    def held(self, key: _K | None = None) -> int:
        """What ``key`` holds, or everyone together."""
        return self._sum if key is None else self._held[key]


class BoundedServer:
    """Serves a listening socket's connections with ``handle(reader, writer)``, holding at
    most what ``caps`` allows (keyed by the peer's address, or ``None`` for one key)."""

    def __init__(
        self,
        sock: socket.socket,
        caps: Caps[str | None],
        handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
        *,
        by_peer: bool = True,
    ) -> None:
        sock.setblocking(False)
        self._sock = sock
        self._caps = caps
        self._handle = handle
        self._by_peer = by_peer
        self._room = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._accepting = asyncio.ensure_future(self._accept())

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while self._caps.held() >= self._caps.total:
                self._room.clear()
                await self._room.wait()
            try:
                conn, peer = await loop.sock_accept(self._sock)
            except OSError:
                await asyncio.sleep(_RETRY)
                continue
            key = str(peer[0]) if self._by_peer and peer else None
            if not self._caps.take(key):
                conn.close()
                continue
            task = asyncio.ensure_future(self._serve(conn, key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _serve(self, conn: socket.socket, key: str | None) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
        except OSError:
            conn.close()
            self._give(key)
            return
        try:
            await self._handle(reader, writer)
        finally:
            writer.close()
            self._give(key)

    def _give(self, key: str | None) -> None:
        self._caps.give(key)
        self._room.set()

    def close(self) -> None:
        """Stop accepting, drop every connection, close the socket; idempotent."""
        self._accepting.cancel()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(OSError):
            self._sock.close()
