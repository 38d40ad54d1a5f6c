"""How a fake's sandboxes meet the network: settings shared by ``serve``, ``FakeCreateOS``
and the runtimes (the process runtime's router and resolver read them)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HOSTNAME_MODES", "HostnameMode", "NetworkOptions"]

#: ``ignore``: host-name egress rules are stored and echoed, not enforced (the service);
#: ``enforce``: they are enforced too (the strict mode).
HOSTNAME_MODES = ("ignore", "enforce")


@dataclass(frozen=True, slots=True)
class NetworkOptions:
    """A fake's network settings; the defaults are the service's behaviour."""

    #: Sandboxes may reach private ranges (10/8, 172.16/12, 192.168/16, 100.64/10: the
    #: host's LAN); off by default, so a test cannot touch the machine's neighbours.
    private: bool = False
    #: Where sandboxes' DNS queries are relayed (``None``: the host's first ``nameserver``).
    dns_upstream: tuple[str, int] | None = None


@dataclass(slots=True)
class HostnameMode:
    """Whether a fake enforces host-name egress rules; one object shared by its runtimes,
    changed per test (``createos(egress_hostnames=...)``) for sandboxes made afterwards and
    rule changes."""

    enforce: bool = False

    @property
    def name(self) -> str:
        return "enforce" if self.enforce else "ignore"

    def set(self, name: str) -> None:
        if name not in HOSTNAME_MODES:
            raise ValueError(f"egress_hostnames must be 'ignore' or 'enforce', not {name!r}")
        self.enforce = name == "enforce"
