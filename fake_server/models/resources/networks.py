"""Overlay networks of one account: names, CIDRs, members with their overlay IPs.

Decisions (sources in docs/fidelity-resources.md): a sandbox joins only while ``running``;
deleting a network that still has members is 409 ``network_in_use`` (a member whose sandbox
is ``destroying`` still counts, so a delete right after a destroy may need a retry, as the
TypeScript SDK's how-to warns); members of destroyed sandboxes drop out by themselves.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.models.errors import BadRequest, Conflict, NotFound, QuotaExceeded
from fake_server.models.resources.base import check_name
from fake_server.models.transitions import GONE

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models.context import Context
    from fake_server.models.sandbox import Sandbox

__all__ = ["Member", "Network", "Networks"]

#: Networks without an explicit ``cidr`` get the next free /24 of this block.
AUTO_BLOCK = ipaddress.IPv4Network("10.200.0.0/16")
MIN_PREFIX, MAX_PREFIX = 16, 28


@dataclass(slots=True)
class Member:
    sandbox: Sandbox
    ip: str

    @property
    def status(self) -> str:
        """``active`` while the sandbox runs, else the sandbox's own status."""
        return "active" if self.sandbox.status == "running" else self.sandbox.status


@dataclass(slots=True)
class Network:
    id: str
    name: str
    cidr: ipaddress.IPv4Network
    created_at: float
    members: dict[str, Member] = field(default_factory=dict)

    def live_members(self) -> list[Member]:
        for sandbox_id, member in list(self.members.items()):
            member.sandbox.settle()
            if member.sandbox.status in GONE or member.sandbox.gone():
                del self.members[sandbox_id]
                member.sandbox.machine.leave_network(self.id)
        return list(self.members.values())

    def next_ip(self) -> str:
        used = {m.ip for m in self.members.values()}
        for host in list(self.cidr.hosts())[1:]:  # .1 is the gateway
            if str(host) not in used:
                return str(host)
        raise Conflict("network has no free addresses", code="network_full")


class Networks:
    """The account's networks, by id (found by id or name)."""

    def __init__(self, ctx: Context, sandbox: Callable[[str], Sandbox]) -> None:
        self._ctx = ctx
        self._sandbox = sandbox
        self.items: dict[str, Network] = {}

    def create(self, body: dict[str, Any]) -> Network:
        name = check_name(body.get("name"))
        raw_cidr = body.get("cidr")
        if any(n.name == name for n in self.items.values()):
            raise Conflict("a network with this name already exists", code="network_exists")
        if len(self.items) >= self._ctx.resources.max_networks:
            raise QuotaExceeded(
                f"network quota exceeded ({self._ctx.resources.max_networks} per account)"
            )
        cidr = self._explicit(raw_cidr) if raw_cidr not in (None, "") else self._auto()
        network = Network(
            id="net_" + self._ctx.ids.ulid().lower(),
            name=name,
            cidr=cidr,
            created_at=self._ctx.clock.time(),
        )
        self.items[network.id] = network
        return network

    def _explicit(self, raw: Any) -> ipaddress.IPv4Network:
        if not isinstance(raw, str):
            raise BadRequest("must be a string such as 10.10.0.0/24", field="cidr")
        try:
            cidr = ipaddress.IPv4Network(raw, strict=True)
        except ValueError:
            message = "is not a valid IPv4 network such as 10.10.0.0/24"
            raise BadRequest(message, field="cidr") from None
        if not cidr.is_private or not MIN_PREFIX <= cidr.prefixlen <= MAX_PREFIX:
            raise BadRequest(
                f"must be a private range from /{MIN_PREFIX} to /{MAX_PREFIX}", field="cidr"
            )
        for other in self.items.values():
            if other.cidr.overlaps(cidr):
                raise BadRequest(f"conflicts with network {other.id} ({other.cidr})", field="cidr")
        return cidr

    def _auto(self) -> ipaddress.IPv4Network:
        for candidate in AUTO_BLOCK.subnets(new_prefix=24):
            if not any(n.cidr.overlaps(candidate) for n in self.items.values()):
                return candidate
        raise Conflict("no free address range left", code="network_exhausted")  # pragma: no cover

    def find(self, ref: str) -> Network | None:
        """A network by id or by its friendly name, as the service looks them up (the CLI's
        ``GetNetwork``/``DeleteNetwork``/``AttachNetwork``: "by id OR friendly name")."""
        network = self.items.get(ref)
        if network is None:
            network = next((n for n in self.items.values() if n.name == ref), None)
        return network

    def get(self, network_id: str) -> Network:
        network = self.find(network_id)
        if network is None:
            raise NotFound("network not found", code="network_not_found")
        network.live_members()
        return network

    def delete(self, network_id: str) -> Network:
        network = self.get(network_id)
        members = network.live_members()
        if members:
            raise Conflict(
                f"network in use: {len(members)} member(s); detach them first",
                code="network_in_use",
            )
        del self.items[network.id]
        return network

    def listing(self) -> list[Network]:
        for network in self.items.values():
            network.live_members()
        return list(self.items.values())

    def attach(self, sandbox_id: str, network_id: Any) -> Network:
        if not isinstance(network_id, str) or not network_id:
            raise BadRequest("is required", field="id")
        sandbox = self._sandbox(sandbox_id)
        sandbox.require_running()
        network = self.get(network_id)
        return self.join(network, sandbox)

    def join(self, network: Network, sandbox: Sandbox) -> Network:
        if sandbox.id in network.members:
            raise Conflict("sandbox is already attached to this network", code="already_attached")
        from fake_server.runtime.api import FeatureUnavailable

        member = Member(sandbox, network.next_ip())
        try:  # the process runtime wires a real interface; bashkit records only
            sandbox.machine.join_network(network.id, f"{member.ip}/{network.cidr.prefixlen}")
        except FeatureUnavailable as exc:
            raise Conflict(str(exc), code="runtime_unsupported") from None
        except OSError as exc:
            raise Conflict(
                f"this host cannot connect the sandbox to the network ({exc}); "
                "use the bashkit runtime",
                code="runtime_unsupported",
            ) from None
        network.members[sandbox.id] = member
        return network

    def detach(self, sandbox_id: str, network_id: str) -> Network:
        self._sandbox(sandbox_id)
        network = self.get(network_id)
        member = network.members.pop(sandbox_id, None)
        if member is None:
            raise NotFound("sandbox is not attached to this network", code="attachment_not_found")
        member.sandbox.machine.leave_network(network.id)
        return network

    def vanish(self, network_id: str) -> None:
        """Out-of-band: the network disappears with its memberships (later calls get 404)."""
        network = self.items.pop(network_id, None)
        if network is None:
            raise KeyError(network_id)
        for member in network.members.values():
            member.sandbox.machine.leave_network(network_id)
