"""Per-lease in-memory state: active tracked calls, *closing* and *unconfirmed cleanup* (§6.7).

A scope is one lease as seen by one worker: ``[companyId, environmentId, apiUrl,
sha256(apiKey), providerLeaseId]``. Execute and sync calls register here so release, destroy
and shutdown can cancel them and wait for their own cleanup (process DELETE, scratch ``rm``)
before touching the sandbox. A ``CreateosCleanupError`` from tracked work marks the scope
*unconfirmed* until the sandbox is deleted (a destroy, or a release without reuse). Idle
scopes are dropped, so memory stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from pytest_createos.provider._errors import CreateosCleanupError, CreateosError
from pytest_createos.provider._signal import (
    AbortController,
    OperationCancelled,
    any_signal,
    deadline_signal,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from pytest_createos.provider._clock import Clock
    from pytest_createos.provider._signal import AbortSignal

__all__ = ["Scope", "ScopeRegistry"]

T = TypeVar("T")


@dataclass(eq=False)
class _Tracked:
    controller: AbortController = field(default_factory=AbortController)
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(eq=False)
class Scope:
    """The state of one lease in this worker."""

    active: set[_Tracked] = field(default_factory=set)
    closing: bool = False
    unconfirmed: bool = False

    @property
    def idle(self) -> bool:
        return not (self.active or self.closing or self.unconfirmed)


class ScopeRegistry:
    """All scopes of one provider, plus its permanent *shutting down* flag."""

    __slots__ = ("_clock", "_scopes", "shutting_down")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._scopes: dict[str, Scope] = {}
        self.shutting_down = False

    def get(self, key: str) -> Scope | None:
        return self._scopes.get(key)

    def __len__(self) -> int:
        return len(self._scopes)

    def check_open(self, key: str) -> None:
        """Execute/sync guard: no new work while shutting down, closing or unconfirmed."""
        scope = self._scopes.get(key)
        if self.shutting_down or (scope is not None and (scope.closing or scope.unconfirmed)):
            raise CreateosError("CreateOS lease is closing or requires cleanup.")

    async def track(
        self, key: str, timeout_ms: int, work: Callable[[AbortSignal], Awaitable[T]]
    ) -> T:
        """Run cancellable work under "host abort OR ``timeout_ms`` elapsed"."""
        scope = self._scopes.setdefault(key, Scope())
        tracked = _Tracked()
        scope.active.add(tracked)
        try:
            with (
                deadline_signal(self._clock, timeout_ms / 1000) as deadline,
                any_signal(tracked.controller.signal, deadline) as signal,
            ):
                return await work(signal)
        except CreateosCleanupError:
            scope.unconfirmed = True
            raise
        finally:
            scope.active.discard(tracked)
            tracked.done.set()
            self._forget_if_idle(key)

    @contextlib.asynccontextmanager
    async def closing(self, key: str) -> AsyncIterator[Scope]:
        """Mark the scope closing, cancel and await its active work, then yield it."""
        scope = self._scopes.setdefault(key, Scope())
        if scope.closing:
            raise CreateosError("CreateOS lease cleanup is already in progress.")
        scope.closing = True
        try:
            await self._cancel(scope)
            yield scope
        finally:
            scope.closing = False
            self._forget_if_idle(key)

    async def shutdown(self) -> None:
        """Refuse new work forever, then cancel and await everything still running."""
        self.shutting_down = True
        for scope in list(self._scopes.values()):
            await self._cancel(scope)

    async def _cancel(self, scope: Scope) -> None:
        calls = list(scope.active)
        for call in calls:
            call.controller.abort(OperationCancelled())
        for call in calls:
            await call.done.wait()

    def _forget_if_idle(self, key: str) -> None:
        scope = self._scopes.get(key)
        if scope is not None and scope.idle:
            del self._scopes[key]
