"""The provider's view of time: ``now()`` and ``sleep()``, plus optional virtual-clock hooks.

A virtual clock (``fake_server.clock.VirtualClock``) may also offer ``busy()``/``idle()`` and
the exchange hooks ``request_sent()``/``response_received()``/``exchange_closed()``; the
provider looks them up with ``getattr`` so it never imports the fake, and so that a virtual
clock does not jump while the provider is working or while a request, a reply head or body
bytes are on the wire. The provider holds ``busy()`` while it computes and is ``idle()`` only
while it waits for the wire. Each request opens an exchange (its id goes in the
``X-Fake-Clock-Exchange`` header); the provider claims the reply head when the headers arrive,
every body byte as it reads it, and closes the exchange when it is done with the reply, after
an error or when it abandons it -- never after some real time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["EXCHANGE_HEADER", "Clock", "SystemClock", "busy", "idle", "notify", "open_exchange"]

#: Carries the exchange id to the fake (the same name as ``fake_server.clock.EXCHANGE_HEADER``).
EXCHANGE_HEADER = "X-Fake-Clock-Exchange"


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


def notify(clock: Clock, hook: str, *args: object) -> None:
    """Call an optional hook such as ``exchange_closed`` if the clock has one."""
    method: Callable[..., object] | None = getattr(clock, hook, None)
    if callable(method):
        method(*args)


def open_exchange(clock: Clock) -> str | None:
    """Announce a request about to be sent; the exchange id, or None for a plain clock."""
    method: Callable[[], object] | None = getattr(clock, "request_sent", None)
    exchange = method() if callable(method) else None
    return exchange if isinstance(exchange, str) and exchange else None


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
