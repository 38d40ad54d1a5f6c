"""Counts wall-clock waiting while a block runs: the provider must wait only on its clock.

Two checks, both cheap to read in a report:

* ``sleeps``: calls of ``asyncio.sleep`` or ``time.sleep`` with a non-zero delay, from anywhere
  in the process (the fake and the provider share the loop, and neither should sleep for real
  under a ``VirtualClock``);
* ``provider_timers``: event-loop timers (``call_at``/``call_later``, which is what
  ``asyncio.sleep``, ``wait_for`` and ``asyncio.timeout`` use underneath) armed for the future
  while a frame of ``pytest_createos/provider`` is on the stack: a wall-clock deadline hidden
  in the provider or in the HTTP stack it calls.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType, TracebackType

__all__ = ["SleepSpy"]

_PROVIDER_DIR = "pytest_createos/provider/"


def _provider_on_stack() -> bool:
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if _PROVIDER_DIR in frame.f_code.co_filename.replace("\\", "/"):
            return True
        frame = frame.f_back
    return False


class SleepSpy:
    """``with SleepSpy(loop) as spy:`` … then read ``spy.sleeps`` and ``spy.provider_timers``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.sleeps = 0
        self.provider_timers = 0
        self._saved: list[tuple[Any, str, Any]] = []

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name, _ABSENT)))
        setattr(owner, name, value)

    def __enter__(self) -> SleepSpy:
        real_async_sleep = asyncio.sleep
        real_time_sleep = time.sleep
        real_call_at: Callable[..., asyncio.TimerHandle] = self.loop.call_at

        async def async_sleep(delay: float, result: Any = None) -> Any:
            if delay > 0:
                self.sleeps += 1
            return await real_async_sleep(delay, result)

        def time_sleep(seconds: float) -> None:
            if seconds > 0:
                self.sleeps += 1
            real_time_sleep(seconds)

        def call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            if when > self.loop.time() and _provider_on_stack():
                self.provider_timers += 1
            return real_call_at(when, callback, *args, **kwargs)

        self._patch(asyncio, "sleep", async_sleep)
        self._patch(asyncio.tasks, "sleep", async_sleep)
        self._patch(time, "sleep", time_sleep)
        self._patch(self.loop, "call_at", call_at)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for owner, name, value in reversed(self._saved):
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self._saved.clear()


_ABSENT = object()
