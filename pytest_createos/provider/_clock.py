"""The provider's view of time: ``now()`` and ``sleep()``, plus optional virtual-clock hooks.

A virtual clock (``fake_server.clock.VirtualClock``) may also offer ``busy()``/``idle()`` and
``request_sent()``/``response_received()``; the provider looks them up with ``getattr`` so it
never imports the fake, and so that a virtual clock does not jump while the provider is working
or while a request, a reply or an NDJSON frame is on the wire. The provider holds ``busy()``
while it computes and is ``idle()`` only while it waits for the wire; it claims each reply when
it is done with it and each NDJSON frame as it parses it, so it never waits in real time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Clock", "SystemClock", "busy", "idle", "notify"]


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
