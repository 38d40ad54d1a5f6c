"""Handlers for ``/v1/templates``: builds, views and build logs (plain and followed)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, WORLD_KEY
from fake_server.http.streams.writers import open_ndjson
from fake_server.http.wire.common import iso, query_int, read_json, success
from fake_server.http.wire.templates import template_json
from fake_server.models.errors import BadRequest, NotFound
from fake_server.models.paging import page

if TYPE_CHECKING:
    from fake_server.clock import Clock
    from fake_server.models.resources.templates import LogLine, Template, Templates

__all__ = ["create_template", "delete_template", "get_template", "list_templates", "template_logs"]


def _templates(request: web.Request) -> Templates:
    templates: Templates = request[BACKEND_KEY].resources.templates
    return templates


def _clock(request: web.Request) -> Clock:
    clock: Clock = request.app[WORLD_KEY].ctx.clock
    return clock


async def list_templates(request: web.Request) -> web.Response:
    now = _clock(request).now()
    items, pagination = page(
        _templates(request).listing(),
        query_int(request, "limit", 50),
        query_int(request, "offset", 0),
    )
    data = {"data": [template_json(t, now) for t in items], "pagination": pagination}
    return ok(data)


async def create_template(request: web.Request) -> web.Response:
    request[BACKEND_KEY].require_credit()
    template = await _templates(request).create(await read_json(request))
    return web.json_response(success(template_json(template, _clock(request).now())), status=201)


async def get_template(request: web.Request) -> web.Response:
    include = request.query.get("include", "")
    if include not in ("", "dockerfile"):
        raise BadRequest("must be dockerfile", field="include")
    template = _templates(request).get(request.match_info["template_id"])
    data = template_json(template, _clock(request).now(), dockerfile=include == "dockerfile")
    return ok(data)


async def delete_template(request: web.Request) -> web.Response:
    template = _templates(request).delete(request.match_info["template_id"])
    return ok({"ok": True, "id": template.id})


def _event(template: Template, line: LogLine) -> dict[str, Any]:
    at = template.created_at + (
        template.started + template.pending + line.offset - template.started
    )
    return {"ts": iso(at), "level": line.level, "line": line.line, "attempt": line.attempt}


async def template_logs(request: web.Request) -> web.StreamResponse:
    template = _templates(request).get(request.match_info["template_id"])
    attempt = query_int(request, "attempt", 0)
    if not 0 <= attempt <= template.attempt:
        raise NotFound("build attempt not found", code="attempt_not_found")
    clock = _clock(request)

    def visible(now: float) -> list[LogLine]:
        lines = template.visible_log(now)
        return [line for line in lines if line.attempt == attempt] if attempt else lines

    if request.query.get("follow", "").lower() not in ("true", "1"):
        text = "".join(line.line + "\n" for line in visible(clock.now()))
        return web.Response(text=text, content_type="text/plain")
    response, writer = await open_ndjson(request)
    sent = 0
    with contextlib.suppress(ConnectionResetError):
        while True:
            now = clock.now()
            lines = visible(now)
            for line in lines[sent:]:
                await writer.write_frame(_event(template, line))
            sent = len(lines)
            status = template.status(now)
            if status in ("ready", "failed"):
                final = {"final": True, "status": status, "attempt": template.attempt}
                await writer.write_frame(final)
                break
            await clock.sleep(_next_due(template, now))
    return response


def _next_due(template: Template, now: float) -> float:
    began = template.started + template.pending
    dues = [began + line.offset for line in template.log] + [template.finished_at()]
    later = [due - now for due in dues if due > now]
    return max(min(later, default=0.05), 0.001)
