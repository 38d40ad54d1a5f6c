"""The documented rate limit: N requests per minute per caller, on the fake's clock.

CreateOS answers 429 with ``Retry-After`` when a caller exceeds 300 requests/minute. The fake
keeps a sliding window per caller (an authenticated account; a peer address on the open
routes) measured on its injected clock, so a test can exhaust the
limit and then ``clock.advance()`` past it without waiting. Rejected requests do not count
against the window. The fake's own control API is never limited.

The fake holds one ``RateLimiter`` for its whole life; ``FakeCreateOS.rate_limit = n``
reconfigures it (``None`` turns it off), so the limit can change while serving. The
middleware that consults it is ``http.middlewares.rate_limit_middleware``.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fake_server.clock import Clock

__all__ = ["RateLimiter"]


class RateLimiter:
    """At most ``limit`` admitted requests per caller in any ``window`` seconds of clock time;
    ``limit=None`` admits everything."""

    def __init__(self, limit: int | None = 300, window: float = 60.0, *, clock: Clock) -> None:
        if not (isinstance(window, int | float) and math.isfinite(window) and window > 0):
            raise ValueError("window must be a positive number of seconds")
        self.window = float(window)
        self._clock = clock
        self._admitted: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._sweep_at = 64
        self.limit: int | None = None
        self.configure(limit)

    def configure(self, limit: int | None) -> None:
        """Change the limit (``None``: off); counting starts afresh."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ValueError("limit must be an integer >= 1 requests per window (None: off)")
        with self._lock:
            self.limit = limit
            self._admitted.clear()

    def acquire(self, caller: str) -> int | None:
        """Admit one request (``None``) or say how many whole seconds until a slot frees."""
        now = self._clock.now()
        with self._lock:
            if self.limit is None:
                return None
            horizon = now - self.window
            self._forget_idle(horizon)
            times = self._admitted.setdefault(caller, deque())
            while times and times[0] <= horizon:
                times.popleft()
            if len(times) < self.limit:
                times.append(now)
                return None
            return max(1, math.ceil(times[0] + self.window - now))

    def _forget_idle(self, horizon: float) -> None:
        """Drop callers with no request in the window, now and then (keeps memory bounded)."""
        if len(self._admitted) < self._sweep_at:
            return
        for caller in [c for c, t in self._admitted.items() if not t or t[-1] <= horizon]:
            del self._admitted[caller]
        self._sweep_at = max(64, 2 * len(self._admitted))

    def remaining(self, caller: str) -> int:
        """Requests the caller may still make right now."""
        now = self._clock.now()
        with self._lock:
            if self.limit is None:
                return 0
            times = self._admitted.get(caller, deque())
            return self.limit - sum(1 for t in times if t > now - self.window)

    def callers(self) -> int:
        """How many callers the limiter keeps a window for."""
        with self._lock:
            return len(self._admitted)

    def reset(self) -> None:
        with self._lock:
            self._admitted.clear()
