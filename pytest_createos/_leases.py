"""The ``createos_leases`` factory: any number of leases, each destroyed at teardown."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_createos._bridge import BackgroundLoop
    from pytest_createos.provider import CreateosProvider, Environment, Lease

__all__ = ["LeaseFactory"]


class LeaseFactory:
    """Acquires leases for a test and destroys the ones still alive when it ends.

    ``await leases.acquire()`` in async tests, ``leases.acquire_sync()`` in sync ones; both
    take another ``Environment`` (default: ``createos_env``). A lease the test destroyed
    itself is left alone at teardown.
    """

    def __init__(
        self,
        provider: CreateosProvider,
        env: Environment,
        bridge: BackgroundLoop,
        claim: Callable[[str], None],
    ) -> None:
        self._provider = provider
        self._env = env
        self._bridge = bridge
        self._claim = claim
        #: Every lease acquired so far with its environment, oldest first.
        self.acquired: list[tuple[Environment, Lease]] = []

    async def acquire(self, env: Environment | None = None) -> Lease:
        """A new running lease (awaitable from any asyncio test loop)."""
        env = self._environment(env, "acquire")
        lease = await self._bridge.relay(
            self._provider.acquire_lease(env, run_id=f"pytest-{uuid.uuid4().hex[:12]}")
        )
        return self._keep(env, lease)

    def acquire_sync(self, env: Environment | None = None) -> Lease:
        """A new running lease, from a sync test."""
        env = self._environment(env, "acquire_sync")
        lease = self._bridge.run(
            self._provider.acquire_lease(env, run_id=f"pytest-{uuid.uuid4().hex[:12]}")
        )
        return self._keep(env, lease)

    def _environment(self, env: object, method: str) -> Environment:
        """The test's ``env`` argument checked here, not deep inside the provider."""
        from pytest_createos.provider import Environment

        if env is None:
            return self._env
        if not isinstance(env, Environment):
            raise TypeError(
                f"createos_leases.{method}(env=...) takes an Environment such as createos_env; "
                f"got {type(env).__name__}"
            )
        return env

    def __len__(self) -> int:
        return len(self.acquired)

    def _keep(self, env: Environment, lease: Lease) -> Lease:
        if lease.provider_lease_id:
            self._claim(lease.provider_lease_id)
        self.acquired.append((env, lease))
        return lease

    def close(self, alive: Callable[[str], bool]) -> list[str]:
        """Destroy every lease ``alive`` says still exists; the failures, one line each."""
        from pytest_createos.provider import CreateosError

        failed: list[str] = []
        for env, lease in self.acquired:
            if not lease.provider_lease_id or not alive(lease.provider_lease_id):
                continue
            try:
                self._bridge.run(
                    self._provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
                )
            except CreateosError as error:
                failed.append(f"destroying lease {lease.provider_lease_id} failed: {error}")
        return failed
