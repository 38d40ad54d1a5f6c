"""Account networks on the process runtime: sandboxes on one network reach each other.

Each network with process-runtime members has a hub: a network namespace of its own (made
like a sandbox's, ``netns``) holding a bridge ``br0``. A member gets a veth pair: one end in
the hub, enslaved to the bridge, the other in the sandbox's namespace (``eth1``, ``eth2``…)
carrying its member IP with the network's prefix, so the network's CIDR is on-link there and
nothing else is. The hub has no address and no route: members reach members, never the host
or another network. Configuration is ``/usr/sbin/ip -batch`` run in the namespace
(``nsenter``), two runs per join.

Leaving deletes the hub's end (the pair goes with it); a destroyed sandbox's end goes with its
namespace; the hub is released with its last member and when the runtime closes.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import shutil
from typing import TYPE_CHECKING

from fake_server.runtime.process.net.batch import run_batch
from fake_server.runtime.process.net.netns import NetNamespace

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Hub", "ip_path"]


@functools.cache
def ip_path() -> str:
    """iproute2's ``ip``; ``OSError`` without it."""
    found = shutil.which("ip") or shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if found is None:
        raise FileNotFoundError("iproute2's ip is not installed (apt-get install iproute2)")
    return found


def ip_batch(net: NetNamespace, commands: Sequence[str]) -> None:
    """Run ``ip`` commands inside ``net``; ``OSError`` with ip's first complaint."""
    done = run_batch([*net.enter_argv(), ip_path(), "-batch", "-"], commands, tool="ip")
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise OSError(f"ip failed: {lines[0][:200] if lines else done.returncode}")


class Hub:
    """One network's bridge, in a namespace of its own."""

    def __init__(self) -> None:
        self.net = NetNamespace()
        self.devices: set[str] = set()
        self._names = itertools.count(1)
        try:
            ip_batch(self.net, ["link add br0 type bridge", "link set br0 up"])
        except BaseException:
            self.net.close()
            raise

    def attach(self, member: NetNamespace, inner: str, address: str) -> str:
        """Wire ``member`` in as ``inner`` with ``address`` (``ip/prefix``); the hub's end."""
        device = f"m{next(self._names)}"
        ip_batch(
            self.net,
            [
                f"link add {device} type veth peer name {inner} netns {member.path}",
                f"link set {device} master br0 up",
            ],
        )
        self.devices.add(device)
        try:
            ip_batch(member, [f"addr add {address} dev {inner}", f"link set {inner} up"])
        except OSError:
            self.detach(device)
            raise
        return device

    def detach(self, device: str) -> None:
        """Unplug a member (both ends of its pair go); a gone device is no error."""
        if device in self.devices:
            self.devices.discard(device)
            if not self.net.closed:
                with contextlib.suppress(OSError):  # already gone with the member's namespace
                    ip_batch(self.net, [f"link del {device}"])

    def close(self) -> None:
        self.devices.clear()
        self.net.close()
