"""A process-runtime sandbox's place on the networks, as a VM's network interfaces.

Its network namespace (``netns``, made on first use where sandboxes share one), its ``eth0``
on the fake's router once the API gave it an address, with its egress rules (``network``),
and an ``ethN`` on each account network's bridge it joined (``bridges``). Where each process
has a network of its own (``netmode``) there is none of these, and what needs them says so
(``FeatureUnavailable``); unprivileged with pasta that network has a route out and egress
rules (``usernet``).
"""

from __future__ import annotations

import asyncio
import errno
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from fake_server.runtime.api import FeatureUnavailable
from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.net.netns import NetNamespace
from fake_server.runtime.process.net.usernet import UserNet

if TYPE_CHECKING:
    import socket
    from collections.abc import Sequence

    from fake_server.runtime.process.net.bridges import Hub
    from fake_server.runtime.process.net.netmode import NetworkMode
    from fake_server.runtime.process.net.network import Link, Network

__all__ = ["Networks", "Wiring"]


class Networks(Protocol):
    """What a sandbox's wiring uses of its runtime: the fake's network and the bridges."""

    def network(self) -> Network: ...

    def hub(self, network_id: str) -> Hub: ...

    def release_hub(self, network_id: str) -> None: ...


@dataclass(eq=False)
class Wiring:
    """One sandbox's network namespace, ``eth0`` and account-network interfaces (``name``:
    the sandbox's, as the router knows its link)."""

    owner: Networks
    mode: NetworkMode
    name: str
    _net: NetNamespace | None = field(default=None, init=False)
    #: Its ``eth0`` on the fake's network, once the API gave it an address.
    link: Link | None = field(default=None, init=False)
    _address: str | None = field(default=None, init=False)
    _rules: list[str] = field(default_factory=list, init=False)
    #: Account networks joined: network id -> the hub's end of this sandbox's veth pair.
    networks: dict[str, str] = field(default_factory=dict, init=False)
    _interfaces: int = field(default=0, init=False)
    #: Unprivileged with pasta: its network namespace with a route out (``usernet``).
    _usernet: UserNet | None = field(default=None, init=False)

    @property
    def net(self) -> NetNamespace | None:
        """The sandbox's shared network namespace; ``None`` when each process has its own."""
        self.make()
        return self._net

    def make(self) -> None:
        """Make the namespace (where sandboxes share one), plugged in if it has an address."""
        if self._net is None and self.mode.shared:
            self._net = NetNamespace()
            self._plug()

    def _plug(self) -> None:
        if self._net is not None and self.link is None and self._address is not None:
            self.link = self.owner.network().plug(self._net, self.name, self._address)
            if self._rules:
                self.owner.network().set_rules(self.link, self._rules)

    def set_address(self, address: str) -> None:
        """Plug ``eth0`` with the address the API reports (once; idempotent)."""
        if not self.mode.shared or self.link is not None:
            return
        self._address = address
        self._plug()  # or when the namespace is made

    def usernet(self, layout: object) -> UserNet | None:
        """Unprivileged with pasta (``netmode``), the sandbox's network namespace with a route
        out, made on first use with its egress rules; ``None`` elsewhere. ``layout``: the
        runtime's ``layout_map``."""
        if not self.mode.user_net or not isinstance(layout, idmap.Subordinate | idmap.OwnId):
            return None
        if self._usernet is None:
            usernet = UserNet(layout)
            if self._rules:
                try:
                    usernet.set_rules(self._rules)
                except BaseException:
                    usernet.close()
                    raise
            self._usernet = usernet
        return self._usernet

    def adopt(self, usernet: UserNet) -> None:
        """Take ``usernet`` as the sandbox's network (``userroot``: its root is mounted in
        the same namespaces), with the egress rules set so far; closed with the wiring."""
        if self._usernet is usernet:
            return
        if self._rules:
            usernet.set_rules(self._rules)
        self._usernet = usernet

    def set_egress(self, rules: Sequence[str]) -> None:
        if self.mode.user_net:
            if self._usernet is not None:
                try:
                    self._usernet.set_rules(rules)
                except OSError as exc:
                    raise FeatureUnavailable(f"the egress rules cannot be applied: {exc}") from None
            self._rules = list(rules)
            return
        if not self.mode.shared:
            if rules:
                raise self.mode.unsupported("egress rules")
            return
        if self.link is not None:
            try:
                self.owner.network().set_rules(self.link, rules)
            except OSError as exc:
                raise FeatureUnavailable(f"the egress rules cannot be applied: {exc}") from None
        self._rules = list(rules)

    def join(self, network_id: str, address: str) -> None:
        """Plug into the network's bridge with ``address`` (``ip/prefix``) on ``ethN``."""
        if self.net is None:
            raise self.mode.unsupported("account networks")
        if network_id in self.networks:
            return
        self._interfaces += 1
        hub = self.owner.hub(network_id)
        try:
            self.networks[network_id] = hub.attach(self.net, f"eth{self._interfaces}", address)
        finally:
            self.owner.release_hub(network_id)

    def leave(self, network_id: str) -> None:
        device = self.networks.pop(network_id, None)
        if device is not None:
            self.owner.hub(network_id).detach(device)
            self.owner.release_hub(network_id)

    async def connect(self, port: int, *, loopback: bool = False) -> socket.socket:
        """A TCP connection to ``port`` on ``eth0``'s address, from the router; with
        ``loopback``, to ``127.0.0.1`` from inside the namespace (``ProcessMachine.connect``)."""
        if self.net is None:
            raise self.mode.unsupported("preview URLs to servers in the sandbox")
        if loopback:
            sock = self.net.socket()  # TCP over IPv4
            try:
                await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
            except BaseException:
                sock.close()
                raise
            return sock
        if self.link is None:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "the sandbox has no address yet")
        return await self.owner.network().connect(self.link, port)

    def unplug(self) -> None:
        """Unplug ``eth0`` and leave every account network (the namespace stays)."""
        link, self.link = self.link, None
        if link is not None:
            self.owner.network().unplug(link)
        for network_id in list(self.networks):
            self.leave(network_id)

    def close(self) -> None:
        """Close the namespace (it goes with its last process)."""
        if self._net is not None:
            self._net.close()
        usernet, self._usernet = self._usernet, None
        if usernet is not None:
            usernet.close()
