"""The sandboxes' resolver: ``169.254.0.1:53`` in the router, relayed to the host's resolver.

Every sandbox's ``/etc/resolv.conf`` names the router's address. The fake listens there (UDP
and TCP sockets made in the router's namespace, served by the fake's loop) and relays each
query unchanged to the host's first resolver (``/etc/resolv.conf`` of the host, or
```upstream`` when given) from the host's own namespace, so a host resolver on loopback
(systemd-resolved's ``127.0.0.53``) serves sandboxes too. Without a resolver to relay to,
each query is answered ``REFUSED`` at once. ``watch`` sees every UDP answer
before the sandbox does (the strict hostname mode learns addresses from it).

Bounded (``caps``): a sandbox has at most ``QUERIES_EACH`` UDP queries in flight (each holds
a socket to the upstream resolver for up to ``UPSTREAM_TIMEOUT``; more are dropped, as a busy
resolver drops them, and the client asks again) and ``TCP_EACH`` TCP connections (more are
closed at once); all sandboxes together ``QUERIES_TOTAL`` and ``TCP_TOTAL`` (past which no
TCP connection is accepted until one ends: ``caps.BoundedServer``). A TCP connection
with no byte either way for ``TCP_IDLE`` seconds is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import TYPE_CHECKING, Any, cast

from fake_server.runtime.process.containment.caps import BoundedServer, Caps

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from fake_server.runtime.process.net.netns import NetNamespace

__all__ = ["Resolver", "host_resolver"]

PORT = 53
#: Real seconds an upstream resolver has to answer one query.
UPSTREAM_TIMEOUT = 5.0
#: UDP queries in flight: per sandbox, and for all sandboxes together.
QUERIES_EACH, QUERIES_TOTAL = 32, 256
#: DNS-over-TCP connections: per sandbox, and for all sandboxes together.
TCP_EACH, TCP_TOTAL = 8, 64
#: Real seconds a TCP connection may go without a byte either way (RFC 7766's idle timeout).
TCP_IDLE = 10.0
#: TCP connections the kernel queues while the relay accepts none.
_BACKLOG = 64
_MAX_UDP = 65535


def host_resolver(path: str = "/etc/resolv.conf") -> tuple[str, int] | None:
    """The host's first ``nameserver`` (IPv4), or ``None``."""
    with contextlib.suppress(OSError):
        with open(path) as file:
            for line in file:
                fields = line.split()
                if len(fields) >= 2 and fields[0] == "nameserver" and "." in fields[1]:
                    return fields[1], PORT
    return None


def refused(query: bytes) -> bytes:
    """The answer ``REFUSED`` to ``query`` (its header turned into a reply's): a sandbox
    whose fake has no resolver to relay to learns so at once instead of timing out."""
    flags = ((query[2] | 0x80) & 0xF9, 0x80 | 5)  # QR set, AA/TC clear; RA, rcode 5
    return query[:2] + bytes(flags) + query[4:]


class _Relay(asyncio.DatagramProtocol):
    """One query's socket on the host side: the first answer goes back to the sandbox."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        if not self.answer.done():
            self.answer.set_result(data)

    def error_received(self, exc: Exception) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)


class _Listener(asyncio.DatagramProtocol):
    def __init__(self, owner: Resolver) -> None:
        self._owner = owner
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.DatagramTransport", transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        client = str(addr[0])
        if self._owner.queries.take(client):  # else dropped: the sandbox has enough in flight
            self._owner.spawn(self._owner.relay(self, data, addr), client)


class Resolver:
    """The relay of one router; ``serve()`` starts it, ``close()`` stops it."""

    def __init__(self, net: NetNamespace, address: str, upstream: tuple[str, int] | None) -> None:
        self._net = net
        self._address = address
        #: Where queries go (``None``: the host has no resolver; sandboxes get no answer).
        self.upstream = upstream
        #: Awaited with ``(sandbox address, answer)`` before each UDP answer is relayed.
        self.watch: Callable[[str, bytes], Awaitable[None]] | None = None
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: BoundedServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: What the sandboxes hold: queries in flight, TCP connections (by address).
        self.queries: Caps[str] = Caps(QUERIES_EACH, QUERIES_TOTAL)
        self.connections: Caps[str | None] = Caps(TCP_EACH, TCP_TOTAL)

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        udp = self._net.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tcp = self._net.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            udp.bind((self._address, PORT))
            tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            tcp.bind((self._address, PORT))
            tcp.listen(_BACKLOG)
        except OSError:
            udp.close()
            tcp.close()
            raise
        try:
            transport, _ = await loop.create_datagram_endpoint(lambda: _Listener(self), sock=udp)
        except BaseException:
            udp.close()
            tcp.close()
            raise
        self._udp = transport
        self._tcp = BoundedServer(tcp, self.connections, self._stream)

    def spawn(self, coro: Coroutine[Any, Any, None], client: str) -> None:
        """Run one query's relay as a task the resolver cancels when it closes; what
        ``client`` took of ``queries`` goes back when it ends."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def done(task: asyncio.Task[None]) -> None:
            self._tasks.discard(task)
            self.queries.give(client)

        task.add_done_callback(done)

    async def relay(
        self, listener: _Listener, query: bytes, client: tuple[str | object, int]
    ) -> None:
        if self.upstream is None:
            if listener.transport is not None and len(query) >= 12:
                listener.transport.sendto(refused(query), client)
            return
        loop = asyncio.get_running_loop()
        try:
            transport, relay = await loop.create_datagram_endpoint(
                _Relay, remote_addr=self.upstream
            )
        except OSError:
            return
        try:
            transport.sendto(query)
            async with asyncio.timeout(UPSTREAM_TIMEOUT):
                answer = await relay.answer
        except (OSError, TimeoutError):
            return
        finally:
            transport.close()
        if self.watch is not None:
            await self.watch(str(client[0]), answer)
        if listener.transport is not None:
            listener.transport.sendto(answer, client)

    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """DNS over TCP (answers too large for UDP): the bytes go both ways unchanged."""
        try:
            if self.upstream is None:
                return
            async with asyncio.timeout(UPSTREAM_TIMEOUT):
                up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            try:
                async with asyncio.timeout(TCP_IDLE) as idle:

                    def heard() -> None:
                        idle.reschedule(asyncio.get_running_loop().time() + TCP_IDLE)

                    await asyncio.gather(
                        _pipe(reader, up_writer, heard), _pipe(up_reader, writer, heard)
                    )
            finally:
                up_writer.close()
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        """Stop listening and drop every query in flight; idempotent."""
        udp, self._udp = self._udp, None
        if udp is not None:
            udp.close()
        tcp, self._tcp = self._tcp, None
        if tcp is not None:
            tcp.close()
        for task in list(self._tasks):
            task.cancel()


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, heard: Callable[[], None]
) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(_MAX_UDP):
            heard()
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
