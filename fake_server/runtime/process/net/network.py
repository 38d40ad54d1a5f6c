"""One fake's sandbox network, as a VM sees it: ``eth0``, a default route, DNS, egress rules.

``Network`` puts together the router (``router``: a namespace per fake, NAT to the host's
uplink), the resolver and the metadata endpoint the router's addresses answer on
(``resolver``, ``metadata``; served by the fake's loop from the first sandbox on) and each
sandbox's egress policy (``policy``: nftables in the router). A sandbox joins with its
address (``plug``); preview URLs connect to that address from the router (``connect``), as
the service's ingress reaches ``eth0``, never loopback: a server bound to ``127.0.0.1`` in the
sandbox is not reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.runtime import egress
from fake_server.runtime.netoptions import HostnameMode, NetworkOptions
from fake_server.runtime.process.net import nft, policy
from fake_server.runtime.process.net.metadata import Metadata
from fake_server.runtime.process.net.resolver import Resolver, host_resolver
from fake_server.runtime.process.net.router import GATEWAY, METADATA, Router

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fake_server.runtime.process.net.netns import NetNamespace

__all__ = ["Link", "Network", "NetworkOptions"]


@dataclass(slots=True)
class Link:
    """A sandbox's place on the network: its address and the router's end of its ``eth0``."""

    sandbox_id: str
    address: str
    device: str
    enforced: bool = False
    #: The rules last applied, and whether their host names were enforced then.
    rules: tuple[str, ...] = ()
    names: bool = False


class Network:
    """The network of one fake's process-runtime sandboxes; closed with the runtime."""

    def __init__(
        self, options: NetworkOptions | None = None, hostnames: HostnameMode | None = None
    ) -> None:
        self.options = options or NetworkOptions()
        #: Whether host-name rules are enforced (read when rules are set).
        self.hostnames = hostnames if hostnames is not None else HostnameMode()
        self.router = Router(private=self.options.private)
        upstream = self.options.dns_upstream or host_resolver()
        self.resolver = Resolver(self.router.net, GATEWAY, upstream)
        self.resolver.watch = self._learn
        self.metadata = Metadata(self.router.net, METADATA, self._describe)
        self.links: dict[str, Link] = {}
        self._serving: asyncio.Task[None] | None = None
        #: Why the resolver and metadata endpoint do not answer (``None``: they do).
        self.failure: str | None = None

    @property
    def uplink_missing(self) -> str | None:
        return self.router.uplink_missing

    def plug(self, sandbox: NetNamespace, sandbox_id: str, address: str) -> Link:
        """Give the sandbox its ``eth0`` with ``address`` (the address the API reports)."""
        self._serve()
        link = Link(sandbox_id, address, self.router.plug(sandbox, address))
        self.links[address] = link
        return link

    def unplug(self, link: Link) -> None:
        """Forget a destroyed sandbox's link (it goes with the sandbox's namespace)."""
        if self.links.get(link.address) is link:
            del self.links[link.address]
        if link.enforced:
            with contextlib.suppress(OSError):
                self._nft(policy.forget(link.device, enforced=True))

    def set_rules(self, link: Link, rules: Sequence[str]) -> None:
        """Enforce ``rules`` on the link's traffic out (``OSError`` when nft refuses)."""
        if self.router.uplink_missing is not None:
            return  # no way out at all: every rule set is already stricter than that
        names = self.hostnames.enforce
        batch, enforced = policy.commands(
            link.device, rules, enforced_before=link.enforced, names=names
        )
        if batch:
            self._nft(batch)
        link.enforced, link.rules, link.names = enforced, tuple(rules), names and enforced

    async def _learn(self, client: str, answer: bytes) -> None:
        """In the strict mode: open the addresses a DNS answer gives for a name the asking
        sandbox's rules allow, before the sandbox reads the answer."""
        link = self.links.get(client)
        if link is None or not link.names:
            return
        import dns.exception
        import dns.message
        import dns.rdatatype

        try:
            message = dns.message.from_wire(answer)
        except dns.exception.DNSException:
            return
        ports: list[int | None] = []
        for question in message.question:
            ports += egress.name_ports(link.rules, question.name.to_text()) or []
        records = [r for r in message.answer if r.rdtype == dns.rdatatype.A]
        addresses = [str(item.address) for record in records for item in record]
        if not ports or not addresses:
            return
        ttl = min(record.ttl for record in records)
        batch = policy.names_learned(link.device, addresses, ports, ttl)
        with contextlib.suppress(OSError):  # the link went meanwhile
            await nft.run_async(batch, enter=self.router.net.enter_argv())

    async def connect(self, link: Link, port: int) -> socket.socket:
        """A TCP connection from the router to ``port`` on the sandbox's ``eth0`` address."""
        sock = self.router.net.socket(socket.AF_INET)
        try:
            await asyncio.get_running_loop().sock_connect(sock, (link.address, port))
        except BaseException:
            sock.close()
            raise
        return sock

    def close(self) -> None:
        """Stop serving and remove the router (every link with it); idempotent."""
        serving, self._serving = self._serving, None
        if serving is not None:
            serving.cancel()
        self.resolver.close()
        self.metadata.close()
        self.links.clear()
        self.router.close()

    def _nft(self, batch: list[str]) -> None:
        nft.run(batch, enter=self.router.net.enter_argv())

    def _describe(self, address: str) -> dict[str, str] | None:
        link = self.links.get(address)
        return None if link is None else {"sandbox_id": link.sandbox_id, "ip": link.address}

    def _serve(self) -> None:
        """Start the resolver and metadata endpoint on the fake's loop (once, when it runs)."""
        if self._serving is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._serving = loop.create_task(self._start())

    async def _start(self) -> None:
        try:
            await self.resolver.serve()
            await self.metadata.serve()
        except OSError as exc:  # the router is the fake's own: only a broken host gets here
            self.failure = f"the sandboxes' resolver cannot listen: {exc.strerror or exc}"
