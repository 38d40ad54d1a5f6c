"""``createos_shared``: one fake and provider for a whole module or session.

The per-test fixtures reset their fake before every test, which would destroy a lease a
module-scoped fixture holds. So the shared fixtures get a fake of their own, never reset by
the plugin: state carries from test to test, and the per-test checks (leaks, unfired faults)
do not run on it; what is still alive when the session ends is reported as a warning.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from pytest_createos._bridge import BridgedProvider
from pytest_createos._leases import LeaseFactory
from pytest_createos._live import RedactedConfig
from pytest_createos._markers import DEFAULT_SHAPE
from pytest_createos._report import LEAKING
from pytest_createos._session import AUTOJUMP_THRESHOLD
from pytest_createos.provider import Environment, Pacer

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pytest_createos._bridge import BackgroundLoop, RunSync

__all__ = ["SharedCreateOS"]

COMPANY_ID = "pytest-createos"
ENVIRONMENT_ID = "pytest-createos-shared"


class SharedCreateOS:
    """A fake, its clock, an ``Environment`` and a provider that outlive single tests.

    ``leases()`` is a context manager yielding a ``LeaseFactory`` whose leases are destroyed
    when the block ends: wrap a module-scoped fixture's ``yield`` in it.
    """

    def __init__(self, bridge: BackgroundLoop, *, seed: int = 0) -> None:
        self.clock = VirtualClock(autojump_threshold=AUTOJUMP_THRESHOLD)
        self.fake = FakeCreateOS(
            seed=seed, clock=self.clock, transitions=TransitionPolicy.immediate()
        )
        self.fake.runtimes.process_choice = 'createos_shared.fake.runtime = "process"'
        self.fake.start()
        #: The test during which each sandbox appeared, for the end-of-session leak warning.
        self._made_during: dict[str, str] = {}
        self._bridge = bridge
        self.env = Environment(
            company_id=COMPANY_ID,
            environment_id=ENVIRONMENT_ID,
            config=RedactedConfig(
                apiUrl=self.fake.url,
                apiKey=self.fake.api_key,
                shape=DEFAULT_SHAPE,
                reuseLease=False,
            ),
        )
        self.provider = BridgedProvider(
            bridge,
            clock=self.clock,
            pacer=Pacer.disabled(),
            environ={},
            transport=clock_transport(self.clock),
        )

    @property
    def run(self) -> RunSync:
        """``run(provider.x(...))`` from sync code, like ``createos_run``."""
        return self._bridge.run

    @contextlib.contextmanager
    def leases(self) -> Iterator[LeaseFactory]:
        """A ``LeaseFactory`` on the shared fake; its live leases are destroyed on exit."""
        factory = LeaseFactory(self.provider, self.env, self._bridge, lambda _id: None)
        try:
            yield factory
        finally:
            failed = factory.close(self._alive)
            if failed:
                raise RuntimeError("createos_shared: " + "; ".join(failed))

    def _alive(self, sandbox_id: str) -> bool:
        return any(s.id == sandbox_id and s.status in LEAKING for s in self.fake.sandboxes())

    def test_ended(self, nodeid: str) -> None:
        """Sandboxes that appeared since the last call were made during test ``nodeid``."""
        for sandbox in self.fake.sandboxes():
            self._made_during.setdefault(sandbox.id, nodeid)

    def leaked(self) -> list[str]:
        """Sandboxes still running or paused, as ``id (status, made during TEST)``."""
        return [
            f"{s.id} ({s.status}, made during {self._made_during.get(s.id, 'no test')})"
            for s in self.fake.sandboxes()
            if s.status in LEAKING
        ]

    def close(self) -> None:
        """Shut the provider, the fake and its clock down; idempotent."""
        self.provider.shutdown_blocking()
        self.fake.close()
        self.clock.close()
