"""What the provider's fake-backed tests share: a fake, its clock, a provider and one lease."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fake_server import FakeCreateOS, VirtualClock
    from pytest_createos.provider import CreateosProvider, Environment, Lease

__all__ = ["Leased"]


@dataclass
class Leased:
    """Test files subclass it to add their own helpers (``Sandbox(**vars(leased))``)."""

    fake: FakeCreateOS
    clock: VirtualClock
    provider: CreateosProvider
    env: Environment
    lease: Lease

    @property
    def id(self) -> str:
        assert self.lease.provider_lease_id is not None
        return self.lease.provider_lease_id
