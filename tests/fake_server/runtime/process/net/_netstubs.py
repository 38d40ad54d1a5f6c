"""A resolver and an "internet" of the test's own, so sandbox traffic never leaves the machine.

``DnsStub`` answers A queries from a table on a loopback UDP port of the test (dnspython
builds the answers; every other name gets NXDOMAIN): fakes of the suite relay their
sandboxes' DNS there. ``Upstream`` is a network namespace of the test wired to the host by a
veth pair in ``198.18.0.0/15`` (or ``block``; a /30 no host address overlaps), with HTTP
servers served by the test's loop from sockets made inside it: what a sandbox reaches through
the fake's NAT.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import os
import random
import socket
from typing import TYPE_CHECKING, Any, cast

import dns.flags
import dns.message
import dns.rcode
import dns.rrset

from fake_server.runtime.process.net.netlink import configure
from fake_server.runtime.process.net.netns import NetNamespace

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DnsStub", "Upstream"]

_names = itertools.count(1)


class _Answers(asyncio.DatagramProtocol):
    def __init__(self, table: dict[str, str], asked: list[str]) -> None:
        self.table = table
        self.asked = asked
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.DatagramTransport", transport)

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        query = dns.message.from_wire(data)
        reply = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().rstrip(".").lower()
        self.asked.append(name)
        address = self.table.get(name)
        if address is None:
            reply.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == 1:  # A
            reply.answer.append(dns.rrset.from_text(question.name, 5, "IN", "A", address))
        reply.flags |= dns.flags.RA
        assert self.transport is not None
        self.transport.sendto(reply.to_wire(), addr)


class DnsStub:
    """A resolver on ``127.0.0.1``: ``table`` maps names to IPv4 addresses."""

    def __init__(self) -> None:
        self.table: dict[str, str] = {}
        self.asked: list[str] = []
        self.address: tuple[str, int] = ("127.0.0.1", 0)
        self._transport: asyncio.DatagramTransport | None = None

    async def start(self) -> DnsStub:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _Answers(self.table, self.asked), local_addr=("127.0.0.1", 0)
        )
        self._transport = transport
        self.address = transport.get_extra_info("sockname")[:2]
        return self

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


class Upstream:
    """A namespace reached through the host at ``address``; ``serve(port)`` answers HTTP."""

    def __init__(self, block: str = "198.18.0.0/15") -> None:
        self.net = NetNamespace()
        space = ipaddress.IPv4Network(block)
        self.host_end = f"cot{os.getpid() % 100000}x{next(_names)}"
        taken = configure(None, lambda ipr: [
            ipaddress.IPv4Network(f"{a.get('address')}/{a['prefixlen']}", strict=False)
            for a in ipr.get_addr(family=2)
        ])  # fmt: skip
        for _ in range(64):
            index = random.randrange(space.num_addresses // 4)
            net = ipaddress.IPv4Network((int(space.network_address) + index * 4, 30))
            if not any(net.overlaps(other) for other in taken):
                break
        self.gateway, self.address = (str(net.network_address + i) for i in (1, 2))
        fd = self.net.fileno

        def host_side(ipr: Any) -> None:
            ipr.link(
                "add", ifname=self.host_end, kind="veth", peer={"ifname": "eth0", "net_ns_fd": fd}
            )
            index = ipr.link_lookup(ifname=self.host_end)[0]
            ipr.addr("add", index=index, address=self.gateway, prefixlen=30)
            ipr.link("set", index=index, state="up")

        def inside(ipr: Any) -> None:
            index = ipr.link_lookup(ifname="eth0")[0]
            ipr.addr("add", index=index, address=self.address, prefixlen=30)
            ipr.link("set", index=index, state="up")

        configure(None, host_side)
        configure(fd, inside)
        self.hits: list[tuple[str, str]] = []
        self._servers: list[asyncio.Server] = []

    async def serve(self, port: int, body: bytes = b"hello from upstream\n") -> None:
        """An HTTP server at ``address:port`` answering 200 ``body`` to anything."""

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                head = await reader.readuntil(b"\r\n\r\n")
                peer = writer.get_extra_info("peername")[0]
                self.hits.append((peer, head.split(b"\r\n")[0].decode()))
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                             % len(body) + body)  # fmt: skip
                await writer.drain()
            writer.close()

        sock = self.net.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.address, port))
        sock.listen(16)
        self._servers.append(await asyncio.start_server(handle, sock=sock))

    def close(self) -> None:
        for server in self._servers:
            server.close()

        def remove(ipr: Any) -> None:
            found = ipr.link_lookup(ifname=self.host_end)
            if found:
                ipr.link("del", index=found[0])

        configure(None, remove)
        self.net.close()


def on_host(predicate: Callable[[str], bool], command: list[str]) -> list[str]:
    """Lines of a host command's output that ``predicate`` keeps (``ip link``, ``nft``)."""
    import subprocess

    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=10)
    return [line for line in done.stdout.splitlines() if predicate(line)]
