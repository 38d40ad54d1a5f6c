"""How a fake's sandboxes meet the network: settings shared by ``serve``, ``FakeCreateOS``
and the runtimes (the process runtime's router and resolver read them)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NetworkOptions"]


@dataclass(frozen=True, slots=True)
class NetworkOptions:
    """A fake's network settings; the defaults are the service's behaviour."""

    #: Sandboxes may reach private ranges (10/8, 172.16/12, 192.168/16, 100.64/10: the
    #: host's LAN); off by default, so a test cannot touch the machine's neighbours.
    private: bool = False
    #: Where sandboxes' DNS queries are relayed (``None``: the host's first ``nameserver``).
    dns_upstream: tuple[str, int] | None = None
