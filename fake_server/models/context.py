"""What every account and sandbox of one fake shares: clock, ids, journal, catalog, policy."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from fake_server.models.catalog import Catalog
from fake_server.models.journal.events import Journal
from fake_server.models.transitions import TransitionPolicy

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fake_server.clock import Clock
    from fake_server.models.ids import IdGenerator
    from fake_server.runtime.api import Commands, SharedBucket
    from fake_server.runtime.choice import Runtimes

__all__ = ["Context", "Host", "ResourceSettings"]


@dataclass(frozen=True, slots=True)
class Host:
    """A placement target ``host_id`` may name; ``labels`` are what ``node_selector`` matches."""

    id: str
    region: str
    labels: Mapping[str, str] = field(default_factory=dict)


def _hosts() -> dict[str, Host]:
    return {
        "host-eu-1": Host("host-eu-1", "eu", {"region": "eu", "arch": "amd64", "tier": "standard"}),
        "host-us-1": Host("host-us-1", "us", {"region": "us", "arch": "amd64", "tier": "standard"}),
    }


@dataclass(slots=True)
class ResourceSettings:
    """Per-fake knobs for the account resources; tests change them on ``fake.resources``."""

    #: Per-account quotas (a create beyond them is 403 ``quota_exceeded``).
    max_networks: int = 10
    max_disks: int = 20
    max_templates: int = 10
    #: ``False`` makes every disk route answer 503 "disks API not configured".
    disks_configured: bool = True
    #: Fake seconds a template build waits ``pending``, and each Dockerfile step takes.
    template_pending_seconds: float = 1.0
    template_step_seconds: float = 0.5
    #: Placement targets for ``host_id`` and ``node_selector``.
    hosts: dict[str, Host] = field(default_factory=_hosts)
    #: Bucket contents by ``(endpoint, bucket)``: they outlive disk registrations, as a real
    #: bucket outlives its registration.
    buckets: dict[tuple[str, str], SharedBucket] = field(default_factory=dict)
    #: Names this fake's buckets apart from those of an earlier ``reset()`` on runtimes that
    #: keep bucket contents themselves (the process runtime's host directories).
    bucket_space: str = field(default_factory=lambda: secrets.token_hex(8))

    DISKS_OFF: ClassVar[str] = "disks API not configured"


@dataclass(slots=True)
class Context:
    """Shared, mutable settings; ``policy`` may be swapped at runtime (control API)."""

    clock: Clock
    ids: IdGenerator
    commands: Commands
    journal: Journal = field(default_factory=Journal)
    catalog: Catalog = field(default_factory=Catalog)
    policy: TransitionPolicy = field(default_factory=TransitionPolicy)
    #: Fake seconds of silence before a stream sends a heartbeat.
    heartbeat_interval: float = 5.0
    #: ``(operation, traceback)`` of every unexpected exception (``FakeCreateOS.errors``).
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: Which runtime new sandboxes get (``None``: bashkit, made on first use).
    runtimes: Runtimes | None = None

    def runtime_choice(self) -> Runtimes:
        if self.runtimes is None:
            from fake_server.runtime.choice import Runtimes

            self.runtimes = Runtimes(self.commands)
        return self.runtimes

    #: Quotas, switches and bucket contents of the account resources (networks, disks...).
    resources: ResourceSettings = field(default_factory=ResourceSettings)
