"""Time for the fake and for the code under test: one injectable clock (docs/time.md).

``RealClock`` is wall time, for ``createos-fake serve``; ``VirtualClock`` moves only when every
party provably waits. ``base`` holds the interface, ``virtual`` the clock, ``watch`` its view of
loops and threads, ``wire`` of exchanges on the wire, ``transport`` the httpx clients' reports.
"""

from __future__ import annotations

from fake_server.clock.base import EXCHANGE_HEADER, Clock, Hold, RealClock
from fake_server.clock.transport import clock_transport, sync_clock_transport
from fake_server.clock.virtual import DEFAULT_EPOCH, VirtualClock

__all__ = [
    "DEFAULT_EPOCH",
    "EXCHANGE_HEADER",
    "Clock",
    "Hold",
    "RealClock",
    "VirtualClock",
    "clock_transport",
    "sync_clock_transport",
]
