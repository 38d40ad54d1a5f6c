"""Whether this host can give process-runtime sandboxes a way out, and if not, why not."""

from __future__ import annotations

import os

from fake_server.runtime.process.net import nft

__all__ = ["FORWARDING", "FORWARDING_OFF", "NFT_MISSING", "uplink_missing"]

FORWARDING = "/proc/sys/net/ipv4/ip_forward"
NFT_MISSING = "nftables' nft is not installed (apt-get install nftables)"
FORWARDING_OFF = (
    "the host's IPv4 forwarding is off and cannot be turned on here "
    "(sysctl -w net.ipv4.ip_forward=1 on the host)"
)


def uplink_missing() -> str | None:
    """Why sandboxes cannot get a way out here (no ``nft``, or IPv4 forwarding off and not
    ours to turn on: a read-only ``/proc/sys`` in a container); ``None`` when they can."""
    if nft.nft_path() is None:
        return NFT_MISSING
    try:
        with open(FORWARDING) as file:
            if file.read().strip() == "1":
                return None
    except OSError:
        return FORWARDING_OFF
    return None if os.access(FORWARDING, os.W_OK) else FORWARDING_OFF
