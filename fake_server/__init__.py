"""An in-process fake of the CreateOS sandbox API, served by aiohttp, on an injectable clock.

Start here: ``FakeCreateOS`` (the server), ``TransitionPolicy`` (when lifecycle transitions
complete), ``VirtualClock`` (time that jumps while everything waits), ``Fault`` (fault
injection rules for ``fake.faults.add``), ``clock_transport`` (a client of your own that
keeps a virtual clock exact). The reference is ``docs/fake-server.md``.
"""

from __future__ import annotations

from fake_server.clock import Clock, RealClock, VirtualClock, clock_transport, sync_clock_transport
from fake_server.faults import Fault, Faults
from fake_server.models import Event, Journal, Step, TransitionPolicy
from fake_server.runtime.netoptions import NetworkOptions
from fake_server.server import FakeCreateOS
from fake_server.tls import tls_context

__all__ = [
    "Clock",
    "Event",
    "FakeCreateOS",
    "Fault",
    "Faults",
    "Journal",
    "NetworkOptions",
    "RealClock",
    "Step",
    "TransitionPolicy",
    "VirtualClock",
    "clock_transport",
    "sync_clock_transport",
    "tls_context",
]
