"""httpx event hooks that report a client's requests to the fake's clock.

A ``VirtualClock`` jumps only while nothing is on the wire; a client that says when it sends a
request and when a reply arrived lets a thread-mode fake and the test's loop share one
timeline without depending on real-time slack. The provider reports on its own; any other
``httpx.AsyncClient`` gets the same with ``event_hooks=httpx_event_hooks(fake.clock)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_server.clock import Clock

__all__ = ["httpx_event_hooks"]

Hook = Callable[[Any], Awaitable[None]]


def httpx_event_hooks(clock: Clock) -> dict[str, list[Hook]]:
    """``event_hooks`` for an ``httpx.AsyncClient`` (on a ``RealClock`` they cost nothing)."""

    async def sent(request: Any) -> None:
        clock.request_sent()

    async def received(response: Any) -> None:
        clock.response_received()

    return {"request": [sent], "response": [received]}
