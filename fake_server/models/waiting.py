"""Waiting on the fake clock: an event or a deadline, whichever comes first, while idle.

A hand-off between two tasks (a process task records output or its exit, a request handler
waiting on it sends the frame) must not leave an instant in which nobody holds the clock busy:
a virtual clock would jump to the next deadline -- a command timeout -- before the handler
wrote what the process produced. ``Wakeup.set()`` therefore takes a ``hold()`` for every
enrolled waiter, and each waiter releases one only after it has resumed and taken its own
busy tokens back.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from fake_server.clock import Clock, Hold

__all__ = ["Wakeup", "handed_off", "wait_event"]


class Wakeup:
    """A one-shot event that keeps a virtual clock still until its waiters have woken."""

    __slots__ = ("_clock", "_event", "_holds", "_waiters")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._event = asyncio.Event()
        self._waiters = 0
        self._holds: list[Hold] = []

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        if self._event.is_set():
            return
        self._holds = [self._clock.hold() for _ in range(self._waiters)]
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()

    def _enroll(self) -> None:
        self._waiters += 1

    def _leave(self) -> None:
        self._waiters -= 1
        if self._holds:
            self._holds.pop().release()


async def wait_event(clock: Clock, event: Wakeup, timeout: float | None) -> bool:
    """True once ``event`` is set, False when ``timeout`` fake seconds pass first.

    The caller's busy tokens are given back while waiting, so a virtual clock can jump.
    """
    if event.is_set():
        return True
    event._enroll()
    try:
        with clock.idle():
            waiter = asyncio.ensure_future(event.wait())
            sleeper = (
                asyncio.ensure_future(clock.sleep(max(0.0, timeout)))
                if timeout is not None
                else None
            )
            pending = {waiter} if sleeper is None else {waiter, sleeper}
            try:
                await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in pending:
                    if not task.done():
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
    finally:
        # After ``idle()`` gave this task its busy tokens back: only now may the hold go.
        event._leave()
    return event.is_set()


@contextlib.contextmanager
def handed_off(clock: Clock) -> Iterator[Hold]:
    """The caller (a request handler) goes idle while a runtime runs its command; the hold it
    yields keeps the clock still until the runtime holds its own token (``started=``)."""
    bridge = clock.hold()
    with bridge, clock.idle():
        yield bridge
