"""The dashboard's door: the control key at a login form, a session cookie, CSRF, headers.

The dashboard shows everything the fake holds and can arm faults, so it takes the control
key, never an account key. A login gives an ``HttpOnly``, ``SameSite=Strict`` cookie scoped
to the dashboard's path and a CSRF token the page sends back in ``X-CSRF-Token`` with every
change; a change whose ``Origin`` is another site is refused as well. Every answer carries a
Content-Security-Policy that allows scripts and styles from the dashboard's own files only;
the page's also allows ``<style>`` elements with its per-response nonce, which its scripts
give to the ones xterm.js makes.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

__all__ = [
    "COOKIE",
    "CSRF_HEADER",
    "SECURITY_HEADERS",
    "Sessions",
    "key_matches",
    "page_policy",
    "same_origin",
]

COOKIE = "createos_ui"
CSRF_HEADER = "X-CSRF-Token"
#: At most this many logged-in browsers; the oldest session goes first.
MAX_SESSIONS = 64
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'{nonce}; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def page_policy(nonce: str) -> str:
    """The page's policy: styles also from elements carrying ``nonce`` (xterm.js's)."""
    return _POLICY.format(nonce=f" 'nonce-{nonce}'")


SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": _POLICY.format(nonce=""),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class Sessions:
    """Logged-in browsers: session token -> CSRF token, in memory, lost at restart."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self._csrf: OrderedDict[str, str] = OrderedDict()
        self._limit = limit

    def open(self) -> tuple[str, str]:
        """A new ``(session, csrf)`` pair."""
        session, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self._csrf[session] = csrf
        while len(self._csrf) > self._limit:
            self._csrf.popitem(last=False)
        return session, csrf

    def csrf(self, request: web.Request) -> str | None:
        """The CSRF token of the request's session; ``None`` when it has none."""
        token = request.cookies.get(COOKIE)
        return self._csrf.get(token) if token else None

    def close(self, request: web.Request) -> None:
        token = request.cookies.get(COOKIE)
        if token:
            self._csrf.pop(token, None)

    def clear(self) -> None:
        self._csrf.clear()


def key_matches(given: str, expected: str) -> bool:
    """Constant-time comparison of a typed key with the control key."""
    return bool(given) and hmac.compare_digest(
        given.strip().encode("utf-8", "surrogateescape"), expected.encode()
    )


def same_origin(request: web.Request) -> bool:
    """Whether a change comes from the dashboard's own pages: an ``Origin`` (or, without one,
    ``Sec-Fetch-Site``) naming another site is refused; the ``SameSite`` cookie is the other
    half of the guard."""
    origin = request.headers.get("Origin")
    if origin is not None:
        return origin == f"{request.scheme}://{request.host}"
    site = request.headers.get("Sec-Fetch-Site")
    return site is None or site in ("same-origin", "none")


def csrf_ok(request: web.Request, sessions: Sessions) -> bool:
    """A change needs the session's CSRF token in ``X-CSRF-Token``."""
    expected = sessions.csrf(request)
    given = request.headers.get(CSRF_HEADER, "")
    return expected is not None and hmac.compare_digest(given.encode(), expected.encode())


def set_session_cookie(response: web.StreamResponse, token: str, path: str) -> None:
    response.set_cookie(COOKIE, token, path=path, httponly=True, samesite="Strict")


def drop_session_cookie(response: web.StreamResponse, path: str) -> None:
    response.del_cookie(COOKIE, path=path)
