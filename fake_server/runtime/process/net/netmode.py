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
            return NetworkMode("not root")
        reason = exc.strerror or type(exc).__name__
        return NetworkMode(f"a network namespace cannot be created: {reason}")
    missing = uplink_missing()
    return SHARED if missing is None else NetworkMode(uplink_missing=missing)
