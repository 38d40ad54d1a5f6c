"""The clock a process-runtime sandbox's waits use: the fake's time, but real-second timeouts.

Real programs run on real time, so a grace period, a ``wait`` timeout or a heartbeat interval
of theirs must pass in real seconds too; under a ``VirtualClock`` it would otherwise elapse in
an instant while the program had not run at all. Timestamps, busy tokens and holds stay the
fake's, so the rest of the fake (transitions, other sandboxes) keeps its virtual time.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import contextlib

    from fake_server.clock import Clock, Hold

__all__ = ["RealWaits"]


class RealWaits:
    """``sleep()`` in real seconds; everything else from ``clock``."""

    def __init__(self, clock: Clock) -> None:
        self.inner = clock

    def now(self) -> float:
        return self.inner.now()

    def time(self) -> float:
        return self.inner.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def busy(self) -> contextlib.AbstractContextManager[None]:
        return self.inner.busy()

    def idle(self) -> contextlib.AbstractContextManager[None]:
        return self.inner.idle()

    def hold(self) -> Hold:
        return self.inner.hold()

    def request_sent(self) -> str | None:
        return self.inner.request_sent()

    def request_arrived(self, exchange: str | None = None) -> bool:
        return self.inner.request_arrived(exchange)

    def response_sent(self, exchange: str | None = None, size: int = 0) -> None:
        self.inner.response_sent(exchange, size)

    def response_received(self, exchange: str | None = None, size: int = 0) -> None:
        self.inner.response_received(exchange, size)

    def exchange_closed(self, exchange: str | None = None) -> None:
        self.inner.exchange_closed(exchange)
