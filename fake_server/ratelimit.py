"""The documented rate limit: N requests per minute per caller, on the fake's clock.

CreateOS answers 429 with ``Retry-After`` when a caller exceeds 300 requests/minute. The fake
keeps a sliding window per caller (the API key, hashed; or the peer address for requests
without one) measured on its injected clock, so a test can exhaust the limit and then
``clock.advance()`` past it without waiting. Rejected requests do not count against the window.

Off by default in tests (``FakeCreateOS(rate_limit=None)``); ``createos-fake serve`` installs
``rate_limit_middleware(RateLimiter(300, clock=clock))``.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import deque
from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.models.errors import RateLimited

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from fake_server.clock import Clock

__all__ = ["CONTROL_PREFIX", "RateLimiter", "caller_of", "rate_limit_middleware"]

#: The fake's own control API is never rate limited.
CONTROL_PREFIX = "/_fake/"


class RateLimiter:
    """At most ``limit`` admitted requests per caller in any ``window`` seconds of clock time."""

    def __init__(self, limit: int = 300, window: float = 60.0, *, clock: Clock) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError("limit must be an integer >= 1 requests per window")
        if not (isinstance(window, int | float) and math.isfinite(window) and window > 0):
            raise ValueError("window must be a positive number of seconds")
        self.limit = limit
        self.window = float(window)
        self._clock = clock
        self._admitted: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def acquire(self, caller: str) -> int | None:
        """Admit one request (``None``) or say how many whole seconds until a slot frees."""
        now = self._clock.now()
        with self._lock:
            times = self._admitted.setdefault(caller, deque())
            horizon = now - self.window
            while times and times[0] <= horizon:
                times.popleft()
            if len(times) < self.limit:
                times.append(now)
                return None
            return max(1, math.ceil(times[0] + self.window - now))

    def remaining(self, caller: str) -> int:
        """Requests the caller may still make right now."""
        now = self._clock.now()
        with self._lock:
            times = self._admitted.get(caller, deque())
            return self.limit - sum(1 for t in times if t > now - self.window)

    def reset(self) -> None:
        with self._lock:
            self._admitted.clear()


def caller_of(request: web.Request) -> str:
    """Who a request counts against: its API key (hashed, never stored raw) or its peer."""
    key = request.headers.get("X-Api-Key")
    if key:
        return "key:" + hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return f"peer:{request.remote or '?'}"


def rate_limit_middleware(
    limiter: RateLimiter, *, caller: Callable[[web.Request], str] = caller_of
) -> Callable[
    [web.Request, Callable[[web.Request], Awaitable[web.StreamResponse]]],
    Awaitable[web.StreamResponse],
]:
    """An aiohttp middleware raising the fake's ``RateLimited`` error (429 + ``Retry-After``).

    Install it inside the envelope/error middleware so the 429 gets the real envelope.
    """

    @web.middleware
    async def rate_limit(
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        if not request.path.startswith(CONTROL_PREFIX):
            retry_after = limiter.acquire(caller(request))
            if retry_after is not None:
                raise RateLimited(retry_after)
        return await handler(request)

    return rate_limit
