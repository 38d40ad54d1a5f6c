"""``createos-fake serve``'s outer middlewares: the Host check and the one-line request log.

A fake on loopback is reachable from any web page the user opens: a page on a name that
re-resolves to 127.0.0.1 (DNS rebinding) sends its own name in ``Host``, so requests for
other names are refused before anything else runs. Names under ``localhost`` (the preview
hostnames, ``http.handlers.preview``) are always accepted: browsers resolve them to loopback
themselves (RFC 6761), so no page can rebind one. The log shows what a client did without
what it sent: method, path (still percent-encoded, no query string), status, milliseconds and
the fault that fired, never keys, bodies or query values.
"""

from __future__ import annotations

import contextvars
import time
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from aiohttp.typedefs import Handler, Middleware

    from fake_server.faults import FaultFiring, Faults


__all__ = ["LOOPBACK_NAMES", "allowed_hosts", "host_guard", "host_name", "request_log"]

#: Names every ``serve`` accepts in ``Host``, besides the address it listens on.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
#: Longest path written to the log (the journal keeps 300 characters too).
_MAX_PATH = 300

_firings: contextvars.ContextVar[list[FaultFiring] | None] = contextvars.ContextVar(
    "serve_firings", default=None
)


def host_name(host: str) -> str:
    """``Host`` without its port, lower case, without a trailing dot; IPv6 keeps brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        name = host[: end + 1] if end > 0 else host
    elif host.count(":") == 1:
        name = host.split(":", 1)[0]
    elif ":" in host:  # a bare IPv6 address, as given to ``--host``
        name = f"[{host}]"
    else:
        name = host
    return name.rstrip(".")


def allowed_hosts(bound: str, extra: Iterable[str]) -> frozenset[str] | None:
    """The accepted ``Host`` names; ``None`` (when ``extra`` holds ``*``) accepts any."""
    names = {host_name(name) for name in extra}
    if "*" in names:
        return None
    return LOOPBACK_NAMES | {host_name(bound)} | names


def host_guard(allowed: frozenset[str] | None) -> Middleware:
    """Refuses (403) a request whose ``Host`` names none of ``allowed``."""

    @web.middleware
    async def check_host(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        name = host_name(host) if host is not None else ""
        if allowed is None or host is None or name in allowed or name.endswith(".localhost"):
            return await handler(request)
        message = (
            "this Host is not served (a guard against DNS rebinding); "
            "start createos-fake serve with --allow-host NAME to accept another name"
        )
        return web.json_response(
            {"status": "fail", "data": {"code": "host_not_allowed", "message": message}},
            status=403,
        )

    return check_host


def request_log(
    faults: Faults,
    write: Callable[[str], None],
    unlogged: Callable[[web.Request], bool] = lambda request: False,
) -> Middleware:
    """Writes one line per request: ``POST /v1/sandboxes 200 12.3ms [fault #1 HttpError 503]``.

    Faults fire in the request's own task, so a context variable ties firings to it. A request
    ``unlogged`` accepts is not written (``serve`` passes the dashboard's: its own traffic is
    not the app's).
    """

    def remember(firing: FaultFiring) -> None:
        seen = _firings.get()
        if seen is not None:
            seen.append(firing)

    faults.listeners.append(remember)

    @web.middleware
    async def log_request(request: web.Request, handler: Handler) -> web.StreamResponse:
        if unlogged(request):
            return await handler(request)
        seen: list[FaultFiring] = []
        token = _firings.set(seen)
        started = time.perf_counter()
        status = "-"  # the client went away before a response
        try:
            response = await handler(request)
            status = str(response.status)
            return response
        finally:
            _firings.reset(token)
            elapsed = (time.perf_counter() - started) * 1000
            path = request.rel_url.raw_path[:_MAX_PATH]
            line = f"{request.method} {path} {status} {elapsed:.1f}ms"
            for firing in seen:
                line += f" fault #{firing.fault_id} {_describe(firing)}"
            write(line)

    return log_request


def _describe(firing: FaultFiring) -> str:
    action = firing.action
    status = getattr(action, "status", None)
    name = type(action).__name__
    return name if status is None else f"{name} {status}"
