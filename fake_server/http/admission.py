"""How many connections one server holds, and which it closes first when it must.

Every connection holds a file descriptor. Clients that stall (a request head sent a byte at a
time, a body that stops coming) would otherwise take every descriptor the process may open,
and then nothing, ``/readyz`` included, could connect until their timeouts fired (slowloris:
1,100 stalled connections under ``ulimit -n 1024``). So a server holds at most half its
open-files limit in connections (``connection_limit``: 512 under ``ulimit -n 1024``), leaving
the other half to sandboxes and their pipes. A connection past the bound closes the one that
has waited longest on its client: a connection with no request in progress (idle between
requests, or a head still arriving), or one whose handler waits for body bytes
(``waiting_on_client``). A connection whose request is being served (an exec that runs, a
stream, a tunnel, a WebSocket) is never closed for another; when every connection is being
served, the newcomer is closed instead.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

from fake_server.runtime.capacity import open_files_limit

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from aiohttp import web

__all__ = ["MIN_CONNECTIONS", "Admission", "connection_limit", "waiting_on_client"]

#: The bound never goes below this, however low the open-files limit.
MIN_CONNECTIONS = 16


class Connection(Protocol):
    def force_close(self) -> None: ...


def connection_limit() -> int | None:
    """Half the process's open-files limit (at least ``MIN_CONNECTIONS``); ``None`` when the
    limit is unknown or unlimited. Read at each connection: ``ulimit`` may change."""
    limit = open_files_limit()
    return None if limit is None else max(MIN_CONNECTIONS, limit // 2)


class Admission:
    """The connections of one server: which are open, and which wait on their client, oldest
    activity first."""

    def __init__(self, limit: Callable[[], int | None] = connection_limit) -> None:
        self._limit = limit
        self._open: set[Connection] = set()
        self._waiting: OrderedDict[Connection, None] = OrderedDict()
        #: Connections closed to make room, for the figures a test reads.
        self.shed = 0

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, connection: Connection) -> None:
        """A new connection, waiting for its first request; room is made for it."""
        self._open.add(connection)
        self._waiting[connection] = None
        limit = self._limit()
        while limit is not None and len(self._open) > limit:
            victim = next((c for c in self._waiting if c is not connection), connection)
            self.closed(victim)
            self.shed += 1
            victim.force_close()
            if victim is connection:
                return

    def heard(self, connection: Connection) -> None:
        """Bytes arrived from its client: it has waited least of all now."""
        if connection in self._waiting:
            self._waiting.move_to_end(connection)

    def waiting(self, connection: Connection, waiting: bool) -> None:
        """Whether it waits on its client (no request in progress, or a body read)."""
        if connection not in self._open:
            return
        if waiting:
            self._waiting[connection] = None
            self._waiting.move_to_end(connection)
        else:
            self._waiting.pop(connection, None)

    def closed(self, connection: Connection) -> None:
        self._open.discard(connection)
        self._waiting.pop(connection, None)


@contextlib.contextmanager
def waiting_on_client(request: web.BaseRequest) -> Iterator[None]:
    """While inside, ``request``'s connection waits on its client (a body read)."""
    connection = request.protocol
    admission = getattr(connection, "admission", None)
    if not isinstance(admission, Admission) or connection is None:
        yield
        return
    admission.waiting(connection, True)
    try:
        yield
    finally:
        admission.waiting(connection, False)
