"""httpx transports that report a client's exchanges to the fake's clock (docs/time.md, rule 3).

httpx is imported when the first is built, not with the fake: ``createos-fake serve`` and a
fake whose clients are the caller's own never load it (httpx, httpcore and, where installed,
trio: about 100 ms of a process's start). The transport itself is ``exchanges``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

    from fake_server.clock.base import Clock
    from fake_server.clock.virtual import VirtualClock

__all__ = ["clock_transport", "sync_clock_transport"]


def clock_transport(
    clock: Clock, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncBaseTransport:
    """``transport=`` for an ``httpx.AsyncClient`` on ``clock`` (wraps ``transport`` if given)."""
    import httpx

    from fake_server.clock.exchanges import ClockTransport
    from fake_server.tls import tls_context

    return ClockTransport(clock, transport or httpx.AsyncHTTPTransport(verify=tls_context()))


def sync_clock_transport(
    clock: VirtualClock, transport: httpx.BaseTransport | None = None
) -> httpx.BaseTransport:
    """``transport=`` for an ``httpx.Client`` on ``clock`` (wraps ``transport`` if given)."""
    import httpx

    from fake_server.clock.exchanges import ClockTransport
    from fake_server.tls import tls_context

    return ClockTransport(
        clock, transport or httpx.HTTPTransport(verify=tls_context()), clock.waiting
    )
