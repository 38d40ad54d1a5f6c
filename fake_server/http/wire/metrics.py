"""Metrics on the wire: the fake's own field names, documented in docs/fake-server.md
("Metrics"); the service's are not public.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http.wire.common import iso

if TYPE_CHECKING:
    from fake_server.models.account.metrics import SandboxMetrics, UsagePoint

__all__ = ["metrics_json", "point_json"]


def metrics_json(m: SandboxMetrics) -> dict[str, object]:
    return {
        "sandbox_id": m.sandbox_id,
        "status": m.status,
        "timestamp": iso(m.at),
        "cpu": {"vcpu": m.vcpu, "usage_seconds": m.cpu_seconds},
        "memory": {
            "limit_bytes": m.memory_limit_bytes,
            "used_bytes": m.memory_used_bytes,
            "used_pct": round(100 * m.memory_used_bytes / m.memory_limit_bytes, 2),
        },
        "processes": m.processes,
        "source": m.source,
    }


def point_json(p: UsagePoint) -> dict[str, object]:
    return {
        "from": iso(p.start),
        "to": iso(p.end),
        "sandboxes": p.sandboxes,
        "running_seconds": p.running_seconds,
        "vcpu_seconds": p.vcpu_seconds,
        "mem_mib_seconds": p.mem_mib_seconds,
    }
