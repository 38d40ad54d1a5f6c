"""Which attending threads are waiting on the fake: the ``VirtualClock``'s view of a sync test.

A synchronous test has no event loop to watch, so its thread is enrolled for the length of the
test (``VirtualClock.attend()``) and counts as working -- time holds still -- except while it is
inside ``VirtualClock.waiting()``: blocked in a request to the fake through a clock transport,
or in a wait helper of the plugin. A thread blocked somewhere the clock was not told about (a
raw ``urllib`` request to the fake, a ``subprocess`` running curl) would then hold time still
for ever, so as a last resort a thread whose Python frame has not moved for ``STUCK`` real
seconds is taken to be blocked in a call, the way a loop stuck outside ``select()`` stops
counting. Code that runs Python moves its frame all the time, so it is never mistaken for that.
"""

from __future__ import annotations

import sys

__all__ = ["STUCK", "ThreadProbe"]

#: Real seconds an attending thread's frame must stand still before it counts as blocked.
STUCK = 0.5


class ThreadProbe:
    """One attending thread: how deep it is in ``waiting()``, and where it last stood."""

    __slots__ = ("_where", "attending", "ident", "since", "waiting")

    def __init__(self, ident: int, now: float) -> None:
        self.ident = ident
        self.attending = 0
        self.waiting = 0
        self._where: tuple[int, int] | None = None
        self.since = now

    def quiet(self, now: float) -> bool:
        """Waiting on the fake, gone, or blocked in one call for ``STUCK`` seconds."""
        if self.waiting or not self.attending:
            return True
        if not self.ident:
            return False  # handed to a thread that has not started it yet
        frame = sys._current_frames().get(self.ident)
        if frame is None:
            return True  # the thread has ended
        where = (id(frame), frame.f_lasti)
        if where != self._where:
            self._where = where
            self.since = now
            return False
        return now - self.since >= STUCK

    def moved(self, now: float) -> None:
        """The thread reported something: it is running, whatever its frame says."""
        self._where = None
        self.since = now
