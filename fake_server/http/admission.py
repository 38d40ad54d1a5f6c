"""How many connections one server holds, and which it closes first when it must.

Every connection holds a file descriptor. Clients that stall (a request head sent a byte at a
time, a body that stops coming) would otherwise take every descriptor the process may open,
and then nothing, ``/readyz`` included, could connect until their timeouts fired (slowloris:
1,100 stalled connections under ``ulimit -n 1024``). So a server holds at most half its
open-files limit in connections (``connection_limit``: 512 under ``ulimit -n 1024``), leaving
the other half to sandboxes and their pipes. A connection past the bound closes one that
waits on its client: first one whose request has not fully arrived (a new connection, a head
still arriving, a handler waiting for body bytes: ``waiting_on_client``), the one heard from
longest ago, then an idle keep-alive connection that has been served before (a pooled client's
connection goes last, so a client in good standing rarely sees one closed under it). A
connection whose request is being served (an exec that runs, a stream, a tunnel, a WebSocket)
is never closed for another; when every connection is being served, the newcomer is closed
instead.
"""

from __future__ import annotations

import contextlib
import socket
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

from fake_server.runtime.capacity import open_files_limit

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from aiohttp import web

__all__ = [
    "ACCEPT_BATCH",
    "LISTEN_BACKLOG",
    "MIN_CONNECTIONS",
    "Admission",
    "Uncounted",
    "connection_limit",
    "deepen_backlog",
    "waiting_on_client",
]

#: The bound never goes below this, however low the open-files limit.
MIN_CONNECTIONS = 16
#: Connections the kernel queues for the server (capped by ``net.core.somaxconn``).
LISTEN_BACKLOG = 4096
#: Connections asyncio accepts at one turn of the loop (each a descriptor before the server
#: can shed any): aiohttp's default is 128.
ACCEPT_BATCH = 32


class Connection(Protocol):
    def force_close(self) -> None: ...


def connection_limit() -> int | None:
    """Half the process's open-files limit (at least ``MIN_CONNECTIONS``); ``None`` when the
    limit is unknown or unlimited. Read at each connection: ``ulimit`` may change."""
    limit = open_files_limit()
    return None if limit is None else max(MIN_CONNECTIONS, limit // 2)


class Admission:
    """The connections of one server: which are open, and which wait on their client (those
    whose request is still arriving, and idle ones served before), least recently heard
    from first."""

    def __init__(self, limit: Callable[[], int | None] = connection_limit) -> None:
        self._limit = limit
        self._open: set[Connection] = set()
        self._arriving: OrderedDict[Connection, None] = OrderedDict()
        self._idle: OrderedDict[Connection, None] = OrderedDict()
        #: Connections closed to make room, for the figures a test reads.
        self.shed = 0

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, connection: Connection) -> None:
        """A new connection, its first request on its way; room is made for it."""
        self._open.add(connection)
        self._arriving[connection] = None
        limit = self._limit()
        while limit is not None and len(self._open) > limit:
            victim = next(
                (c for queue in (self._arriving, self._idle) for c in queue if c is not connection),
                connection,
            )
            self.closed(victim)
            self.shed += 1
            victim.force_close()
            if victim is connection:
                return

    def heard(self, connection: Connection) -> None:
        """Bytes arrived from its client: it has waited least of all now."""
        for queue in (self._arriving, self._idle):
            if connection in queue:
                queue.move_to_end(connection)

    def arriving(self, connection: Connection) -> None:
        """Its request is on its way (a head, or a body a handler waits for)."""
        self._put(connection, self._arriving)

    def idle(self, connection: Connection) -> None:
        """It was served and waits for its next request."""
        self._put(connection, self._idle)

    def serving(self, connection: Connection) -> None:
        """Its request is being served: never closed for another."""
        self._arriving.pop(connection, None)
        self._idle.pop(connection, None)

    def closed(self, connection: Connection) -> None:
        self._open.discard(connection)
        self.serving(connection)

    def _put(self, connection: Connection, queue: OrderedDict[Connection, None]) -> None:
        if connection in self._open:
            self.serving(connection)
            queue[connection] = None


class Uncounted(Admission):
    """What connections without a descriptor of their own answer to (an HTTP/2 stream's
    in-memory channel: its connection is counted where it is a socket): nothing."""

    def __init__(self) -> None:
        super().__init__(limit=lambda: None)

    def opened(self, connection: Connection) -> None:
        pass

    def heard(self, connection: Connection) -> None:
        pass

    def arriving(self, connection: Connection) -> None:
        pass

    def idle(self, connection: Connection) -> None:
        pass

    def serving(self, connection: Connection) -> None:
        pass

    def closed(self, connection: Connection) -> None:
        pass


@contextlib.contextmanager
def waiting_on_client(request: web.BaseRequest) -> Iterator[None]:
    """While inside, ``request``'s connection waits on its client (a body read)."""
    connection = request.protocol
    admission = getattr(connection, "admission", None)
    if not isinstance(admission, Admission) or connection is None:
        yield
        return
    admission.arriving(connection)
    try:
        yield
    finally:
        admission.serving(connection)


def deepen_backlog(site: web.BaseSite) -> None:
    """Let the kernel queue ``LISTEN_BACKLOG`` connections for ``site``'s sockets.

    asyncio listens with the backlog it is given and also accepts that many connections at
    one turn of the loop, each taking a descriptor before the server can shed any, so the
    site is made with a small one (``ACCEPT_BATCH``). A burst of stalled clients past it would
    then fill the kernel's queue, the kernel drop the SYN of the next client (``/readyz``)
    and its retry come a second later. Listening again with a deeper backlog keeps the
    kernel's queue long while asyncio still accepts ``ACCEPT_BATCH`` a turn.
    """
    server = getattr(site, "_server", None)  # as aiohttp's own ``BaseRunner.addresses`` reads
    for sock in getattr(server, "sockets", None) or ():
        with (
            contextlib.suppress(OSError),
            socket.fromfd(sock.fileno(), sock.family, sock.type) as dup,
        ):
            dup.listen(LISTEN_BACKLOG)  # a duplicate descriptor of the same socket
