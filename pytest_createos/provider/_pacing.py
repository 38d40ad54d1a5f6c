"""Request pacing: one FIFO of request starts per API URL, 300 ms apart on the injected clock.

The public API allows 300 requests per minute per caller IP, so every request of this worker
(leases, commands, sync, cleanup) first takes a turn here (docs/provider.md#pacing). Turns are
reservations:
a caller reserves the start time ``max(now, previous start + interval)`` and sleeps until then.
A caller whose signal aborts while it waits raises at once, but its reservation stays, so later
turns remain spaced and in arrival order. Queues are keyed by the SHA-256 of the normalized URL
so no URL is kept in memory longer than needed.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_createos.provider._clock import Clock
    from pytest_createos.provider._signal import AbortSignal

__all__ = ["DEFAULT_INTERVAL", "Pacer"]

#: Seconds between request starts on one API URL.
DEFAULT_INTERVAL = 0.3


class Pacer:
    """Spaces request starts per API URL; ``Pacer.disabled()`` turns pacing off (tests)."""

    __slots__ = ("_interval", "_last_start")

    def __init__(self, interval: float = DEFAULT_INTERVAL) -> None:
        if not interval >= 0:
            raise ValueError("Pacer interval must be a number of seconds >= 0")
        self._interval = float(interval)
        self._last_start: dict[str, float] = {}

    @classmethod
    def disabled(cls) -> Pacer:
        """A pacer that never waits (for tests against a fake, which has no rate limit)."""
        return cls(0.0)

    @property
    def interval(self) -> float:
        return self._interval

    async def wait(self, api_url: str, *, clock: Clock, signal: AbortSignal | None = None) -> None:
        """Wait for this caller's turn to start a request to ``api_url``."""
        if signal is not None:
            signal.raise_if_aborted()
        if self._interval == 0:
            return
        key = hashlib.sha256(api_url.encode()).hexdigest()
        now = clock.now()
        previous = self._last_start.get(key)
        start = now if previous is None else max(now, previous + self._interval)
        self._last_start[key] = start
        if start <= now:
            return
        if signal is None:
            await clock.sleep(start - now)
        else:
            await signal.sleep(clock, start - now)
