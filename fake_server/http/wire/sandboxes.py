"""Sandboxes on the wire: the create request, the sandbox projection and page, the
account's sandbox counts (``whoami``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http.wire.common import bool_field, iso, opt_int, str_field, str_list, str_map
from fake_server.models import SandboxSpec

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fake_server.models import Page, Sandbox, Stats

__all__ = [
    "INGRESS_PREFIX",
    "ingress_url_template",
    "parse_create_sandbox",
    "sandbox_json",
    "sandbox_page",
    "stats_json",
]


def parse_create_sandbox(body: Mapping[str, Any]) -> SandboxSpec:
    shape = str_field(body, "shape", required=True)
    assert shape is not None  # narrowed by required=True
    extras: dict[str, Any] = {
        "egress": list(str_list(body, "egress")),
        "ssh_pubkeys": list(str_list(body, "ssh_pubkeys")),
        "networks": body.get("networks") if isinstance(body.get("networks"), list) else [],
        "disk_mib": opt_int(body, "disk_mib"),
        "auto_pause_after_seconds": opt_int(body, "auto_pause_after_seconds"),
        "bandwidth_quota_bytes": opt_int(body, "bandwidth_quota_bytes"),
        # Checked against the account's networks, disks and hosts (``models.resources.holdings``).
        "networks_raw": body.get("networks"),
        "disks_raw": body.get("disks"),
        "host_id": body.get("host_id"),
        "node_selector": body.get("node_selector"),
    }
    return SandboxSpec(
        shape=shape,
        rootfs=str_field(body, "rootfs") or "",
        region=str_field(body, "region") or "",
        name=str_field(body, "name"),
        ingress_enabled=bool_field(body, "ingress_enabled"),
        envs=str_map(body, "envs"),
        extras=extras,
    )


#: Where a sandbox's preview URLs live on the fake's preview port (``http.handlers.preview``):
#: ``{preview origin}/_ingress/{id}/{port}/``.
INGRESS_PREFIX = "/_ingress"


def ingress_url_template(origin: str, sandbox_id: str) -> str:
    """The template with the literal ``<port>`` placeholder both SDKs substitute, on the
    preview port's ``origin`` (the path form: every client resolves it)."""
    return f"{origin}{INGRESS_PREFIX}/{sandbox_id}/<port>/"


def sandbox_json(s: Sandbox, origin: str = "") -> dict[str, Any]:
    """The service's projection: optional fields absent when unset (``omitempty``), never
    ``null``; ``origin`` (the preview port's) makes the ingress template when ingress is on."""
    data: dict[str, Any] = {
        "id": s.id,
        "status": s.status,
        "name": s.name,
        "ip": s.ip,
        "shape": s.shape.id,
        "rootfs": s.spec.rootfs,
        "region": s.spec.region,
        "vcpu": s.shape.vcpu,
        "mem_mib": s.shape.mem_mib,
        "disk_mib": s.disk_mib,
        "spawn_ms": s.spawn_ms,
        "egress": list(s.egress),
        "created_at": iso(s.created_at),
        "ingress_enabled": s.ingress_enabled,
        "envs": sorted(s.envs),
        "ssh_pubkeys": list(s.ssh_pubkeys),
        "created_by": s.account_id,
        "bandwidth_quota_bytes": s.bandwidth.quota_bytes,
        "bandwidth_ingress_bytes": s.bandwidth.ingress_bytes,
    }
    optional = {
        "running_at": iso(s.running_at),
        "paused_at": iso(s.paused_at),
        "last_resumed_at": iso(s.last_resumed_at),
        "destroyed_at": iso(s.destroyed_at),
        "auto_pause_after_seconds": s.auto_pause_after_seconds,
        "forked_from": s.forked_from,
        "ingress_url_template": ingress_url_template(origin, s.id)
        if s.ingress_enabled and origin
        else None,
    }
    data.update((key, value) for key, value in optional.items() if value is not None)
    return data


def sandbox_page(page: Page, origin: str = "") -> dict[str, Any]:
    return {
        "data": [sandbox_json(s, origin) for s in page.items],
        "pagination": {
            "total": page.total,
            "limit": page.limit,
            "offset": page.offset,
            "count": len(page.items),
        },
    }


def stats_json(user_id: str, stats: Stats) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "stats": {
            "running": stats.running,
            "paused": stats.paused,
            "other": stats.other,
            "total": stats.total,
        },
    }
