"""``GET …/metrics``, ``GET /v1/metrics`` and ``GET /v1/metrics/timeseries``.

The service's field names are not public (the TS SDK's ``COMPATIBILITY.md`` names the routes
and ``SandboxMetricsView``, no fields); these are the fake's own, documented in
docs/fake-server.md ("Metrics").
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, WORLD_KEY, sandbox_id
from fake_server.http.wire.common import iso
from fake_server.http.wire.metrics import metrics_json, point_json
from fake_server.models.account.metrics import window
from fake_server.models.errors import BadRequest

if TYPE_CHECKING:
    from aiohttp import web


__all__ = ["account_metrics", "account_timeseries", "sandbox_metrics"]


def _instant(request: web.Request, name: str) -> float | None:
    """``from``/``to``: unix seconds or an RFC 3339 time; 400 naming the field otherwise."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            value = datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise BadRequest("must be unix seconds or an RFC 3339 time", field=name) from None
    if not math.isfinite(value) or value < 0:
        raise BadRequest("must be unix seconds or an RFC 3339 time", field=name)
    return value


def _window_of(request: web.Request) -> tuple[float, float]:
    now = request.app[WORLD_KEY].ctx.clock.time()
    chosen = window(_instant(request, "from"), _instant(request, "to"), now)
    return chosen.start, chosen.end


async def sandbox_metrics(request: web.Request) -> web.Response:
    return ok(metrics_json(request[BACKEND_KEY].metrics.sandbox_metrics(sandbox_id(request))))


async def account_metrics(request: web.Request) -> web.Response:
    from fake_server.models.usage import Window

    backend = request[BACKEND_KEY]
    start, end = _window_of(request)
    stats = backend.whoami()
    data = point_json(backend.metrics.usage(Window(start, end)))
    data["user_id"] = backend.id
    data["now"] = {"running": stats.running, "paused": stats.paused, "total": stats.total}
    return ok(data)


async def account_timeseries(request: web.Request) -> web.Response:
    from fake_server.models.usage import Window

    backend = request[BACKEND_KEY]
    start, end = _window_of(request)
    raw = request.query.get("step") or "60"
    try:
        step = float(raw)
    except ValueError:
        raise BadRequest("must be a number of seconds", field="step") from None
    points = backend.metrics.usage_series(Window(start, end), step)
    return ok(
        {
            "user_id": backend.id,
            "from": iso(start),
            "to": iso(end),
            "step_seconds": step,
            "points": [point_json(p) for p in points],
        }
    )
