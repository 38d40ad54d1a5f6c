"""The provider's view of time: ``now()`` and ``sleep()``, plus optional virtual-clock hooks.

A virtual clock (``fake_server.clock.VirtualClock``) may also offer ``busy()``/``idle()`` and
``request_sent()``/``response_received()``; the provider looks them up with ``getattr`` so it
never imports the fake, and so that a virtual clock does not jump while the provider is working
or while a request is on the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["Clock", "SystemClock", "busy", "idle", "notify", "reading"]

#: Real seconds a virtual clock is kept still while the provider waits for bytes in flight.
READ_GRACE = 0.05
_HOLDERS: set[asyncio.Task[None]] = set()


@runtime_checkable
class Clock(Protocol):
    """What the provider needs from time; all pacing, polling and deadlines go through it."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock (cancellable)."""
        ...


class SystemClock:
    """Real monotonic time and ``asyncio.sleep``: the default outside tests."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def notify(clock: Clock, hook: str) -> None:
    """Call an optional no-argument hook such as ``request_sent`` if the clock has one."""
    method: Callable[[], object] | None = getattr(clock, hook, None)
    if callable(method):
        method()


def busy(clock: Clock) -> contextlib.AbstractContextManager[object]:
    """Hold the clock still while the provider computes (a virtual clock must not jump)."""
    method: Callable[[], contextlib.AbstractContextManager[object]] | None = getattr(
        clock, "busy", None
    )
    return method() if callable(method) else contextlib.nullcontext()


def idle(clock: Clock) -> contextlib.AbstractContextManager[object]:
    """Let the clock move while the provider waits on something other than ``sleep``."""
    method: Callable[[], contextlib.AbstractContextManager[object]] | None = getattr(
        clock, "idle", None
    )
    return method() if callable(method) else contextlib.nullcontext()


@contextlib.contextmanager
def reading(clock: Clock) -> Iterator[None]:
    """Wait for an answer or response bytes: idle for the clock, after a short real-time grace.

    Bytes a server already wrote are "in flight" but no clock hook tracks them, and a server
    may look idle for a moment while it still works on the answer, so a virtual clock that sees
    everyone idle could jump to a deadline before the answer is read. A helper task
    keeps the clock busy for at most ``READ_GRACE`` real seconds (or until the read returns);
    a read that really waits (a command sleeping on the fake clock) lets time move after that.
    Without ``busy()`` on the clock (real time) this is a no-op.
    """
    hold: Callable[[], contextlib.AbstractContextManager[object]] | None = getattr(
        clock, "busy", None
    )
    if not callable(hold):
        yield
        return
    done = asyncio.Event()
    holder = asyncio.get_running_loop().create_task(_hold_briefly(hold, done))
    _HOLDERS.add(holder)  # asyncio keeps only weak references to tasks
    holder.add_done_callback(_HOLDERS.discard)
    try:
        with idle(clock):
            yield
    finally:
        done.set()


async def _hold_briefly(
    hold: Callable[[], contextlib.AbstractContextManager[object]], done: asyncio.Event
) -> None:
    with hold(), contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), READ_GRACE)
