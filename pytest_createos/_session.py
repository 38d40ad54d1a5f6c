"""The plugin's per-worker state: one fake, one background loop, reset and checked per test."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from pytest_createos._bridge import BackgroundLoop
from pytest_createos._markers import DEFAULT_SHAPE
from pytest_createos._transport import lease_transport
from pytest_createos.provider import CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fake_server.faults import Fault, Faults
    from pytest_createos._markers import MarkerSettings
    from pytest_createos._options import Options

#: How a test chooses real programs; bashkit's ``command not found`` for one says so.
PROCESS_CHOICE = '@pytest.mark.createos(runtime="process")'

__all__ = ["AUTOJUMP_THRESHOLD", "Run", "Session"]

#: Real seconds of quiet before the session clock jumps: the clock's own 2 ms default. It is a
#: debounce, not a proof: a jump also needs every party provably waiting (no busy token, no
#: exchange or partly received request on the wire, every watched loop parked), so a slow
#: request on a loaded machine holds time still however long it takes (docs/time.md).
AUTOJUMP_THRESHOLD = 0.002


@dataclass(slots=True)
class Run:
    """One test's use of the fake: what it was configured with and when it started."""

    fake: FakeCreateOS
    faults: Faults
    settings: MarkerSettings
    started: float
    #: The journal's generation after the test's reset: another means the test reset the fake.
    generation: int = 0
    #: Marker faults, armed when the test body starts (after fixtures such as the lease).
    pending: list[Fault] = field(default_factory=list)

    def arm(self) -> None:
        """Arm the marker faults now; fixture setup has already run without them."""
        pending, self.pending = self.pending, []
        for fault in pending:
            self.faults.add(fault)


class Session:
    """Lazily starts the fake and the background loop on first use; ``close()`` at the end."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self._fake: FakeCreateOS | None = None
        self._faults: Faults | None = None
        self._clock: VirtualClock | None = None
        self._bridge: BackgroundLoop | None = None
        self._lease_providers: dict[bool, CreateosProvider] = {}

    @property
    def fake(self) -> FakeCreateOS:
        fake = self._fake
        if fake is None:
            clock = VirtualClock(autojump_threshold=AUTOJUMP_THRESHOLD)
            fake = self._start(clock)
            self._clock = clock
            self.bridge.clock = clock  # held across every hand-off to the plugin's loop
            self._warm_up(fake, clock)
        return fake

    def _start(self, clock: VirtualClock) -> FakeCreateOS:
        fake = FakeCreateOS(
            seed=self.options.seed, clock=clock, transitions=TransitionPolicy.immediate()
        )
        self._faults = fake.faults
        fake.runtimes.process_choice = PROCESS_CHOICE
        fake.start()
        self._fake = fake
        return fake

    def _warm_up(self, fake: FakeCreateOS, clock: VirtualClock) -> None:
        """One lease lifecycle with time frozen, so the first test does not pay the first-use
        costs (imports, caches) of the fake and the provider."""
        provider = self.lease_provider(live=False)
        env = Environment(
            company_id="pytest-createos",
            environment_id="warm-up",
            config={"apiUrl": fake.url, "apiKey": fake.api_key, "shape": DEFAULT_SHAPE},
        )

        async def lifecycle() -> None:
            lease = await provider.acquire_lease(env)
            await provider.execute(env, lease, "true")
            await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)

        clock.autojump = False
        try:
            with contextlib.suppress(Exception):
                self.bridge.run(lifecycle(), timeout=30)
        finally:
            clock.autojump = True

    @property
    def clock(self) -> VirtualClock:
        self.fake  # noqa: B018 -- starting the fake creates its clock
        assert self._clock is not None
        return self._clock

    @property
    def bridge(self) -> BackgroundLoop:
        if self._bridge is None:
            self._bridge = BackgroundLoop()
        return self._bridge

    def lease_provider(self, *, live: bool) -> CreateosProvider:
        """The provider behind ``createos_lease`` (runs on the bridge; one per mode)."""
        provider = self._lease_providers.get(live)
        if provider is None:
            if live:
                provider = CreateosProvider()
            else:
                provider = CreateosProvider(
                    clock=self.clock,
                    pacer=Pacer.disabled(),
                    environ={},
                    # The clock learns of each exchange on the wire from this transport.
                    transport=clock_transport(self.clock, lease_transport(tls=False)),
                )
            self._lease_providers[live] = provider
        return provider

    def begin(self, settings: MarkerSettings, faults: Sequence[Fault]) -> Run:
        """Reset the fake for a test and apply its marker settings; faults wait for ``arm()``.

        A fake an earlier test closed (``createos_fake.close()``, which failed that test) is
        replaced by a new one on the same clock, so one mistake does not fail every later test.
        """
        fake = self.fake
        if not fake.serving:
            fake = self._start(self.clock)
        registry = self._faults
        assert registry is not None
        fake.reset(seed=settings.seed)
        registry.clear()
        registry.reseed(settings.seed)
        fake.transitions = settings.transitions
        fake.rate_limit = settings.rate_limit
        fake.runtime = settings.runtime
        fake.egress_hostnames = settings.egress_hostnames
        fake.set_credit(settings.credit)
        return Run(
            fake=fake,
            faults=registry,
            settings=settings,
            started=fake.clock.now(),
            generation=fake.journal.generation,
            pending=list(faults),
        )

    def close(self) -> None:
        """Shut everything down in dependency order; idempotent."""
        providers, self._lease_providers = list(self._lease_providers.values()), {}
        if self._bridge is not None:
            for provider in providers:
                self._bridge.run(provider.shutdown(), timeout=10)
            self._bridge.close()
        if self._fake is not None:
            self._fake.close()
        if self._clock is not None:
            self._clock.close()
