"""The shape and rootfs catalogs and the regions the fake accepts.

Documented in docs/fake-server.md#create-body.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Catalog", "RootfsEntry", "Shape"]


@dataclass(frozen=True, slots=True)
class Shape:
    id: str
    vcpu: int
    mem_mib: int
    default_disk_mib: int = 10240
    cpu_quota_pct: int = 100


@dataclass(frozen=True, slots=True)
class RootfsEntry:
    name: str
    description: str
    deprecated: bool = False
    successor: str | None = None


def _shapes() -> dict[str, Shape]:
    # Fractional vCPU shapes run on one vCPU with a CPU quota, as the published catalog does.
    rows = [
        ("s-1vcpu-256mb", 1, 256, 100),
        ("s-0.25vcpu-512mb", 1, 512, 25),
        ("s-0.5vcpu-1gb", 1, 1024, 50),
        ("s-1vcpu-1gb", 1, 1024, 100),
        ("s-1vcpu-2gb", 1, 2048, 100),
        ("s-2vcpu-2gb", 2, 2048, 200),
        ("s-2vcpu-4gb", 2, 4096, 200),
        ("s-4vcpu-4gb", 4, 4096, 400),
        ("s-4vcpu-8gb", 4, 8192, 400),
        ("s-8vcpu-8gb", 8, 8192, 800),
        ("s-8vcpu-16gb", 8, 16384, 800),
    ]
    return {sid: Shape(sid, vcpu, mem, cpu_quota_pct=quota) for sid, vcpu, mem, quota in rows}


def _rootfs() -> dict[str, RootfsEntry]:
    entries = [
        RootfsEntry("devbox:1", "Ubuntu 24.04 with common developer tools"),
        RootfsEntry("desktop:1", "Ubuntu 24.04 desktop for computer use (screens, noVNC)"),
        RootfsEntry("ubuntu:24.04", "Minimal Ubuntu 24.04"),
        RootfsEntry("node:22", "Node.js 22 on Debian"),
        RootfsEntry("python:3.12", "Python 3.12 on Debian"),
    ]
    return {e.name: e for e in entries}


@dataclass(slots=True)
class Catalog:
    """Mutable per fake, so a test can add a shape such as ``test-shape``."""

    shapes: dict[str, Shape] = field(default_factory=_shapes)
    rootfs: dict[str, RootfsEntry] = field(default_factory=_rootfs)
    default_rootfs: str = "devbox:1"
    regions: tuple[str, ...] = ("eu", "us")
    default_region: str = "eu"

    def add_shape(self, shape_id: str, *, vcpu: int = 1, mem_mib: int = 1024) -> Shape:
        shape = Shape(shape_id, vcpu, mem_mib, cpu_quota_pct=100 * vcpu)
        self.shapes[shape_id] = shape
        return shape
