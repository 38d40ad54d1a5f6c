"""What every account and sandbox of one fake shares: clock, ids, journal, catalog, policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fake_server.models.catalog import Catalog
from fake_server.models.journal import Journal
from fake_server.models.resource_base import ResourceSettings
from fake_server.models.transitions import TransitionPolicy

if TYPE_CHECKING:
    from fake_server.clock import Clock
    from fake_server.models.ids import IdGenerator
    from fake_server.runtime.api import Commands
    from fake_server.runtime.choice import Runtimes

__all__ = ["Context"]


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
