"""The host side of one fake's process-runtime sandboxes: a router namespace and its uplink.

Each fake (each ``ProcessRuntime``) makes one network namespace of its own, the router. A
sandbox is wired to it by a veth pair: ``eth0`` in the sandbox carries the sandbox's address
(``ip/32``, the one the API reports) with a default route through ``169.254.0.1`` (the
router's end, ``sN``, which holds that address on every sandbox's link); the router routes the
sandbox's address back to ``sN``. The router reaches the host through a second veth pair
(``up0`` inside, ``cos<pid><n>`` on the host, a ``/30`` picked from ``100.64.0.0/10``) and
masquerades everything it forwards there; the host masquerades it once more to its own
uplink (an ``ip`` table ``createos_<pid>_<n>`` in the host's nftables, which also drops every
packet from the router addressed to the host itself: the host's services and the fake's API
stay out of reach). Sandboxes' addresses are chosen by the API and repeat between fakes, so
they never appear in the host's tables: two fakes run side by side.

The router's own nftables table (``egress``) enforces egress; DNS (``169.254.0.1:53``) and the
metadata endpoint (``169.254.169.254:80``) are sockets of the fake made in the router.

Everything goes with the router's descriptor: closing it removes the namespace, every veth
and the router's table; the host's table is deleted at close, and a fake that died leaves
one behind that the next router removes (its pid is gone).
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import random
from typing import TYPE_CHECKING, Any

from fake_server.runtime.process.net import nft
from fake_server.runtime.process.net.hostcheck import FORWARDING, uplink_missing
from fake_server.runtime.process.net.netlink import configure, set_sysctl
from fake_server.runtime.process.net.netns import NetNamespace

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["GATEWAY", "METADATA", "Router", "host_link_prefix"]

#: The sandboxes' gateway and resolver (the router's end of every sandbox's link).
GATEWAY = "169.254.0.1"
#: The metadata endpoint, on the router's loopback.
METADATA = "169.254.169.254"
#: Where the transit link between the router and the host is picked (a /30 per fake).
_TRANSIT = ipaddress.IPv4Network("100.64.0.0/10")
_SCOPE_LINK = 253
_routers = itertools.count(1)


def host_link_prefix(pid: int) -> str:
    """How the host-side links of the fake in process ``pid`` begin (unique per process), so
    that a leak check counts its own links, not those of other fakes on the machine."""
    return f"cos{_base36(pid)}x"


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
        if not number:
            return text


def _host_addresses(ipr: Any) -> list[ipaddress.IPv4Network]:
    return [
        ipaddress.IPv4Network(f"{a.get('address')}/{a['prefixlen']}", strict=False)
        for a in ipr.get_addr(family=2)
    ]


def _pick_transit(taken: Sequence[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """A /30 of ``100.64.0.0/10`` that no address of the host overlaps."""
    for _ in range(64):
        index = random.randrange(_TRANSIT.num_addresses // 4)
        candidate = ipaddress.IPv4Network((int(_TRANSIT.network_address) + index * 4, 30))
        if not any(candidate.overlaps(net) for net in taken):
            return candidate
    raise OSError("no free /30 in 100.64.0.0/10 for the sandboxes' uplink")


class Router:
    """One fake's router namespace; ``uplink_missing`` says why sandboxes have no way out."""

    def __init__(self, *, private: bool = False) -> None:
        self.private = private
        pid, number = os.getpid(), next(_routers)
        #: The host's table and the host's end of the transit link: unique per fake.
        self.host_table = f"createos_{pid}_{number}"
        self.host_end = f"{host_link_prefix(pid)}{_base36(number)}"[:15]
        self.uplink_missing: str | None = None
        self._devices = itertools.count(1)
        self._host_table_made = False
        self.net = NetNamespace()
        try:
            configure(self.net.fileno, _router_loopback)
            self.uplink_missing = uplink_missing()
            if self.uplink_missing is None:
                sweep_host_tables()
                self._uplink()
        except BaseException:
            self.close()
            raise

    def _uplink(self) -> None:
        fd = self.net.fileno
        transit = configure(None, lambda ipr: _pick_transit(_host_addresses(ipr)))
        host_ip, router_ip = (str(transit.network_address + i) for i in (1, 2))

        def host_side(ipr: Any) -> None:
            ipr.link(
                "add", ifname=self.host_end, kind="veth", peer={"ifname": "up0", "net_ns_fd": fd}
            )
            index = ipr.link_lookup(ifname=self.host_end)[0]
            ipr.addr("add", index=index, address=host_ip, prefixlen=30)
            ipr.link("set", index=index, state="up")

        def router_side(ipr: Any) -> None:
            index = ipr.link_lookup(ifname="up0")[0]
            ipr.addr("add", index=index, address=router_ip, prefixlen=30)
            ipr.link("set", index=index, state="up")
            ipr.route("add", dst="0.0.0.0/0", gateway=host_ip, oif=index)

        configure(None, host_side)
        configure(fd, router_side)
        set_sysctl(fd, "net.ipv4.ip_forward", "1")
        enable_host_forwarding()
        nft.run(_host_rules(self.host_table, self.host_end, router_ip))
        self._host_table_made = True
        nft.run(router_rules(private=self.private), enter=self.net.enter_argv())

    def plug(self, sandbox: NetNamespace, address: str) -> str:
        """Give ``sandbox`` its ``eth0`` with ``address``; the router's end of the link.

        There is no unplug: a link goes with the sandbox's namespace (the kernel removes both
        ends once its last process is gone, where deleting a veth would wait tens of
        milliseconds for the system's network to settle), and every link with the router.
        A later sandbox with the same address takes the route over."""
        device = f"s{next(self._devices)}"
        fd = self.net.fileno

        def sandbox_side(ipr: Any) -> None:
            ipr.link("add", ifname="eth0", kind="veth", peer={"ifname": device, "net_ns_fd": fd})
            index = ipr.link_lookup(ifname="eth0")[0]
            ipr.addr("add", index=index, address=address, prefixlen=32)
            ipr.link("set", index=index, state="up")
            ipr.route("add", dst=f"{GATEWAY}/32", oif=index, scope=_SCOPE_LINK)
            ipr.route("add", dst="0.0.0.0/0", gateway=GATEWAY, oif=index)

        def router_side(ipr: Any) -> None:
            index = ipr.link_lookup(ifname=device)[0]
            ipr.addr("add", index=index, address=GATEWAY, prefixlen=32)
            ipr.link("set", index=index, state="up")
            ipr.route("replace", dst=f"{address}/32", oif=index, scope=_SCOPE_LINK)

        configure(sandbox.fileno, sandbox_side)
        configure(fd, router_side)  # on failure the pair goes with the sandbox's namespace
        return device

    def _remove_host_end(self) -> None:
        def remove(ipr: Any) -> None:
            found = ipr.link_lookup(ifname=self.host_end)
            if found:
                ipr.link("del", index=found[0])

        with contextlib.suppress(OSError):
            configure(None, remove)

    def close(self) -> None:
        """Remove the router (and with it every link) and the host's table; idempotent.

        The host's end of the uplink is deleted here rather than left to the namespace's
        end, which waits for the last socket made in it to close."""
        if not self.net.closed:
            self._remove_host_end()
        self.net.close()
        if self._host_table_made:
            self._host_table_made = False
            with contextlib.suppress(OSError):
                nft.run([f"delete table ip {self.host_table}"])


def _router_loopback(ipr: Any) -> None:
    ipr.addr("add", index=ipr.link_lookup(ifname="lo")[0], address=METADATA, prefixlen=32)


def enable_host_forwarding() -> None:
    """Turn on the host's IPv4 forwarding (as container engines do); left on at close, since
    other fakes and programs of the host may rely on it by then."""
    with open(FORWARDING) as file:
        if file.read().strip() == "1":
            return
    set_sysctl(None, "net.ipv4.ip_forward", "1")


def _host_rules(table: str, host_end: str, router_ip: str) -> list[str]:
    """The host's table: masquerade what the router sends out, drop what it sends the host."""
    return [
        f"add table ip {table}",
        f"add chain ip {table} out {{ type nat hook postrouting priority srcnat; }}",
        f'add rule ip {table} out ip saddr {router_ip} oifname != "{host_end}" masquerade',
        f"add chain ip {table} host {{ type filter hook input priority filter; }}",
        f'add rule ip {table} host iifname "{host_end}" ct state established,related accept',
        f'add rule ip {table} host iifname "{host_end}" reject',
    ]


#: Destinations no sandbox reaches through the router: the host's loopback and link-local
#: networks, multicast and reserved space.
ALWAYS_BLOCKED = ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/3")
#: Private ranges (the host's LAN, carrier-grade NAT), blocked unless allowed.
PRIVATE = ("10.0.0.0/8", "100.64.0.0/10", "172.16.0.0/12", "192.168.0.0/16")


def router_rules(*, private: bool) -> list[str]:
    """The router's table: sandboxes reach 169.254.0.0/16 (its DNS and metadata) and, by
    forwarding through ``up0``, whatever their egress policy allows; never each other."""
    blocked = ", ".join(ALWAYS_BLOCKED if private else (*ALWAYS_BLOCKED, *PRIVATE))
    return [
        "add table inet egress",
        "add set inet egress blocked { type ipv4_addr; flags interval; }",
        f"add element inet egress blocked {{ {blocked} }}",
        "add map inet egress sandboxes { type ifname : verdict; }",
        "add chain inet egress out",
        "add chain inet egress in { type filter hook input priority filter; }",
        'add rule inet egress in iifname "s*" ip daddr 169.254.0.0/16 accept',
        'add rule inet egress in iifname "s*" ct state established,related accept',
        'add rule inet egress in iifname "s*" reject with icmpx admin-prohibited',
        "add chain inet egress through { type filter hook forward priority filter; policy drop; }",
        "add rule inet egress through ct state established,related accept",
        'add rule inet egress through iifname "s*" oifname "up0" jump out',
        'add rule inet egress through iifname "s*" reject with icmpx admin-prohibited',
        "add rule inet egress out ip daddr @blocked reject with icmpx admin-prohibited",
        "add rule inet egress out iifname vmap @sandboxes",
        "add rule inet egress out meta nfproto ipv4 accept",
        "add chain inet egress nat { type nat hook postrouting priority srcnat; }",
        'add rule inet egress nat oifname "up0" masquerade',
    ]


def sweep_host_tables() -> int:
    """Delete the host tables of fakes that died (``createos_<pid>_<n>`` of a gone pid)."""
    removed = 0
    for entry in nft.list_tables():
        family, _, name = entry.partition(" ")
        parts = name.split("_")
        if family != "ip" or len(parts) != 3 or parts[0] != "createos" or not parts[1].isdigit():
            continue
        if os.path.exists(f"/proc/{parts[1]}"):
            continue
        with contextlib.suppress(OSError):
            nft.run([f"delete table ip {name}"])
            removed += 1
    return removed
