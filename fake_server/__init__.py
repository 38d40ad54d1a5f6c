"""An in-process fake of the CreateOS sandbox API, served by aiohttp, on an injectable clock."""

from __future__ import annotations

from fake_server.clock import Clock, RealClock, VirtualClock
from fake_server.models import Journal, Step, TransitionPolicy
from fake_server.server import FakeCreateOS

__all__ = [
    "Clock",
    "FakeCreateOS",
    "Journal",
    "RealClock",
    "Step",
    "TransitionPolicy",
    "VirtualClock",
]
