"""How a fake's process-runtime sandboxes get their network, decided once by one probe.

As root (with util-linux ``nsenter``) each sandbox gets one network namespace shared by all
its processes (``netns``) with an ``eth0`` on the fake's router (``network``): a server one
exec starts is reached by the next exec and by the preview URL, egress rules are enforced
by nftables, account networks plug into it. Without nftables' ``nft`` the router has no
uplink: sandboxes reach nothing past it (``serve`` says so at start-up).

Elsewhere (not root, or no ``nsenter``) bubblewrap still isolates processes through
unprivileged user namespaces, so the runtime runs in a reduced mode instead of refusing: each
sandbox's init gets bubblewrap's own ``--unshare-net`` (loopback only, shared by the sandbox's
processes and by nothing else), and the features that need the shared namespace (preview URLs to
servers inside, egress rules, account networks) raise ``FeatureUnavailable`` saying why.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from fake_server.runtime.api import FeatureUnavailable, RuntimeUnavailable
from fake_server.runtime.process.net.hostcheck import uplink_missing
from fake_server.runtime.process.net.netns import NetNamespace, nsenter_path

__all__ = ["SHARED", "NetworkMode", "detect"]


@dataclass(frozen=True, slots=True)
class NetworkMode:
    """Whether a sandbox's processes share one network namespace, and if not, why not."""

    #: Why they do not (``"not root"``, ``"nsenter is missing"``…); ``None`` when they do.
    missing: str | None = None
    #: Why sandboxes have no way out although they share a network (no ``nft``).
    uplink_missing: str | None = None
    #: Unprivileged: each sandbox's network is a namespace of the fake's with a route out
    #: through pasta (``usernet``), instead of bwrap's loopback-only one.
    user_net: bool = False
    #: Unprivileged, why sandboxes have no route out although pasta is installed (its trial
    #: run failed: no ``/dev/net/tun``, no ``newuidmap``…); ``None`` otherwise.
    route_missing: str | None = None

    @property
    def shared(self) -> bool:
        return self.missing is None

    def describe(self) -> str:
        """The runtime as ``serve`` names it: ``process``, or with what is missing."""
        if self.missing is None and self.uplink_missing is None:
            return "process (sandboxes: eth0, DNS, NAT to the host's uplink)"
        if self.missing is None:
            return (
                "process (sandboxes reach nothing past the fake: no NAT and no egress rules, "
                f"since {self.uplink_missing}; eth0, preview URLs and account networks work)"
            )
        if self.user_net:
            return (
                f"process (each sandbox has a network of its own, {self.missing}: a route "
                "out through pasta, egress rules enforced by nftables outside the sandbox's "
                "reach; no preview URLs or account networks)"
            )
        if self.route_missing is not None:
            return (
                f"process (no shared sandbox network: {self.missing}; loopback only, since "
                f"{self.route_missing})"
            )
        return f"process (no shared sandbox network: {self.missing})"

    def unsupported(self, feature: str) -> FeatureUnavailable:
        """The error for ``feature`` (a plural noun phrase) in the reduced mode."""
        return FeatureUnavailable(
            f"{feature} need the fake to run as root on the process runtime, where a sandbox's "
            f"processes share one network; here each sandbox has a loopback-only network of its "
            f"own ({self.missing})"
        )


#: One network namespace per sandbox (root, with nsenter).
SHARED = NetworkMode()


@functools.cache
def detect() -> NetworkMode:
    """The mode this host allows: ``SHARED`` when a network namespace can be made here."""
    try:
        nsenter_path()
    except RuntimeUnavailable:
        return NetworkMode("nsenter is missing")
    try:
        NetNamespace().close()
    except OSError as exc:
        if os.geteuid() != 0:
            why = _route_missing()
            return NetworkMode("not root", user_net=why is None, route_missing=why or None)
        reason = exc.strerror or type(exc).__name__
        return NetworkMode(f"a network namespace cannot be created: {reason}")
    missing = uplink_missing()
    return SHARED if missing is None else NetworkMode(uplink_missing=missing)


def _route_missing() -> str | None:
    """Why an unprivileged fake's sandboxes get no route out (``usernet``): ``""`` where pasta
    or nftables' ``nft`` is not installed, what failed where a trial network could not be
    made; ``None`` where it can."""
    from fake_server.runtime.process.containment import idmap
    from fake_server.runtime.process.net.nft import nft_path
    from fake_server.runtime.process.net.usernet import UserNet, pasta_path

    if pasta_path() is None or nft_path() is None:
        return ""
    try:
        UserNet(idmap.unprivileged()).close()
    except OSError as exc:
        return f"a sandbox network with pasta cannot be made here ({exc})"
    return None
