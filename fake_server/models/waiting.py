"""Waiting on the fake clock: an event or a deadline, whichever comes first, while idle."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fake_server.clock import Clock

__all__ = ["wait_event"]


async def wait_event(clock: Clock, event: asyncio.Event, timeout: float | None) -> bool:
    """True once ``event`` is set, False when ``timeout`` fake seconds pass first.

    The caller's busy tokens are given back while waiting, so a virtual clock can jump.
    """
    if event.is_set():
        return True
    with clock.idle():
        waiter = asyncio.ensure_future(event.wait())
        if timeout is None:
            try:
                await waiter
            finally:
                waiter.cancel()
            return True
        sleeper = asyncio.ensure_future(clock.sleep(max(0.0, timeout)))
        try:
            await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiter, sleeper):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        return event.is_set()
