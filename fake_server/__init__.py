"""An in-process fake of the CreateOS sandbox API, served by aiohttp, on an injectable clock."""

from __future__ import annotations

from fake_server.clock import Clock, RealClock, VirtualClock

__all__ = ["Clock", "RealClock", "VirtualClock"]
