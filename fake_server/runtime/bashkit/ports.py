"""Servers a test puts into bashkit sandboxes: a port and a stream handler.

Bashkit runs commands inside the fake's own process, so nothing in such a sandbox can listen.
A test that needs a server there (an agent exposing a dev server, a tunnel to a database)
registers one: ``fake.ports.register(8080, handler)``, where ``handler`` has the signature of
``asyncio.start_server``'s callback. Every bashkit sandbox of the fake then has that server on
``eth0`` and on loopback: preview URLs and tunnels reach it through a socket pair, and each
connection runs ``handler`` on the fake's loop. An exception in it is recorded in the fake's
``errors``, as any unexpected exception of the fake is.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import inspect
import socket
import traceback
from collections.abc import Awaitable, Callable

__all__ = ["PortHandler", "PortRegistry"]

PortHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class PortRegistry:
    """The registered servers of one fake (``FakeCreateOS.ports``), shared by its bashkit
    sandboxes; a reset removes them and ends their connections."""

    def __init__(self, on_error: Callable[[str], None] | None = None) -> None:
        self._handlers: dict[int, PortHandler] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._on_error = on_error

    def register(self, port: int, handler: PortHandler) -> None:
        """Serve ``port`` in every bashkit sandbox with ``handler`` (replacing any before)."""
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ValueError("a port is an integer between 1 and 65535")
        if not inspect.iscoroutinefunction(handler) and not inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004 - async callable objects
        ):
            raise TypeError("a port handler is an async function (reader, writer)")
        self._handlers[port] = handler

    def unregister(self, port: int) -> None:
        """Stop serving ``port`` (open connections go on); an unknown port is ignored."""
        self._handlers.pop(port, None)

    def ports(self) -> list[int]:
        return sorted(self._handlers)

    def clear(self) -> None:
        """Remove every server and cancel every open connection's handler (a reset)."""
        self._handlers.clear()
        for task in list(self._tasks):
            task.cancel()

    async def aclose(self) -> None:
        """``clear()``, then let the cancelled handlers finish (a closing fake)."""
        tasks = list(self._tasks)
        self.clear()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)

    async def connect(self, port: int) -> socket.socket:
        """A connection to the server on ``port``: our end of a socket pair whose other end
        ``handler`` serves; ``ConnectionRefusedError`` when nothing is registered there."""
        handler = self._handlers.get(port)
        if handler is None:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "nothing listens on this port")
        ours, theirs = socket.socketpair()
        try:
            ours.setblocking(False)
            reader, writer = await asyncio.open_connection(sock=theirs)
        except BaseException:
            ours.close()
            theirs.close()
            raise
        task = asyncio.ensure_future(self._serve(handler, reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return ours

    async def _serve(
        self, handler: PortHandler, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            await handler(reader, writer)
        except asyncio.CancelledError:
            raise
        except Exception:
            if self._on_error is not None:
                self._on_error(traceback.format_exc())
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
