"""Account networks on the wire."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http.wire.common import iso

if TYPE_CHECKING:
    from fake_server.models.resources.networks import Network

__all__ = ["network_json"]


def network_json(network: Network, *, members: bool = True) -> dict[str, Any]:
    live = network.live_members()
    data: dict[str, Any] = {
        "id": network.id,
        "name": network.name,
        "cidr": str(network.cidr),
        "created_at": iso(network.created_at),
        "member_count": len(live),
    }
    if members:
        data["members"] = [
            {"sandbox_id": m.sandbox.id, "status": m.status, "ip": m.ip, "name": m.sandbox.name}
            for m in live
        ]
    return data
