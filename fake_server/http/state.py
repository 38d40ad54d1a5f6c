"""``AppState``: the narrow state the HTTP layer serves, handed to ``create_app`` by the fake.

The app never sees ``FakeCreateOS``: it gets the world (with its clock, journal and policy),
the list of unexpected errors, the fault engine, the rate limiter, the control credential and
the one fake-wide action it cannot do itself (``reset``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fake_server.models.journal.recording import BodyTexts

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Sequence

    from aiohttp.typedefs import Middleware

    from fake_server.faults import Faults
    from fake_server.http.ratelimit import RateLimiter
    from fake_server.models import World

__all__ = ["AppState"]


@dataclass(frozen=True, kw_only=True)
class AppState:
    """What one app serves; read by the middlewares and the control routes."""

    world: World
    #: ``(operation, traceback)`` for every unexpected exception inside the fake.
    errors: list[tuple[str, str]]
    faults: Faults
    limiter: RateLimiter
    #: The credential of ``/_fake/...`` (``X-Fake-Control-Key``); account keys do not open it.
    control_key: str
    #: Back to a fresh fake (``POST /_fake/reset``).
    reset: Callable[[], None]
    #: The fake's own origin (its bound address, never the Host header).
    origin: Callable[[], str]
    #: Extra middlewares, run after authentication and rate limiting, before fault injection.
    middlewares: Sequence[Middleware] = field(default=())
    #: The preview port's origin (``http.handlers.preview``), for preview URLs; empty: none served.
    preview_origin: Callable[[], str] = field(default=lambda: "")
    #: The default account's API key (``PUT /_fake/credit`` without ``account``).
    default_key: Callable[[], str] = field(default=lambda: "")
    #: The journal's text of recent reply bodies, each redacted once (``recorder``).
    reply_texts: BodyTexts = field(default_factory=BodyTexts)
    #: Sandboxes whose files a fork is copying, each done when the copy is: requests naming
    #: one wait for it (``fork_gate``), so the copy sees the sandbox as it was.
    forking: dict[str, asyncio.Future[None]] = field(default_factory=dict)
