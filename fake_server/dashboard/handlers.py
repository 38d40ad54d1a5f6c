"""The dashboard's JSON API (``/_fake/ui/api/...``): reads of the fake's state, the live
streams and file downloads. Its changes are control-API calls (``dashboard.actions``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.dashboard.journal_page import (
    JournalQuery,
    QueryError,
    entry_detail,
    journal_page,
)
from fake_server.dashboard.live import Hub, process_output, sse_response
from fake_server.dashboard.projections import (
    account_rows,
    next_build_change,
    resources,
    sandbox_detail,
    sandbox_row,
)
from fake_server.dashboard.terminal import terminal
from fake_server.faults import action_to_json
from fake_server.http.control.api import control_routes
from fake_server.http.keys import STATE_KEY
from fake_server.http.routes import ROUTES
from fake_server.http.wire.faults import fault_to_json, firing_to_json
from fake_server.models import ApiError
from fake_server.models.paths import check_abs_path

if TYPE_CHECKING:
    from fake_server.dashboard.journal_rows import EntryIndex
    from fake_server.dashboard.security import Sessions
    from fake_server.http.state import AppState
    from fake_server.models import Sandbox

__all__ = ["HUB_KEY", "ROWS_KEY", "SESSIONS_KEY", "api_routes", "fail"]

HUB_KEY: web.AppKey[Hub] = web.AppKey("fake_server.dashboard.hub")
SESSIONS_KEY: web.AppKey[Sessions] = web.AppKey("fake_server.dashboard.sessions")
#: The journal's rows, kept between reads of the journal page.
ROWS_KEY: web.AppKey[EntryIndex] = web.AppKey("fake_server.dashboard.rows")
#: Largest file the dashboard downloads from a sandbox.
MAX_DOWNLOAD = 64 * 1024 * 1024


#: Operation names the journal and fault forms offer: the API's routes, then the control
#: API's (the dashboard's own actions among them).
_API_OPERATIONS = sorted({operation for _, _, operation, _ in ROUTES})
_OPERATIONS = _API_OPERATIONS + sorted(
    {str(route.kwargs["name"]) for route in control_routes() if "name" in route.kwargs}
)


def fail(status: int, message: str) -> web.Response:
    """An error the page shows as text: ``{"error": message}``."""
    return web.json_response({"error": message}, status=status)


def _state(request: web.Request) -> AppState:
    return request.app[STATE_KEY]


def _sandbox(request: web.Request) -> Sandbox | None:
    return _state(request).world.find_sandbox(request.match_info["sandbox_id"])


async def session(request: web.Request) -> web.Response:
    """The page's session: ``{"logged_in": false}`` without one (a page asks before it shows
    anything, and a 401 would be an error in the browser's console)."""
    state = _state(request)
    csrf = request.app[SESSIONS_KEY].csrf(request)
    if csrf is None:
        return web.json_response({"logged_in": False})
    clock = state.world.ctx.clock
    return web.json_response(
        {
            "logged_in": True,
            "csrf": csrf,
            "url": state.origin(),
            "now": clock.time(),
            "fake_now": clock.now(),
            "operations": _API_OPERATIONS,
        }
    )


async def overview(request: web.Request) -> web.Response:
    """Accounts and every sandbox's row (a thousand rows are ~150 kB)."""
    world = _state(request).world
    accounts = account_rows(world)
    rows = [sandbox_row(s) for s in world.sandboxes()]
    now = world.ctx.clock.time()
    return web.json_response({"accounts": accounts, "sandboxes": rows, "now": now})


async def sandbox(request: web.Request) -> web.Response:
    state = _state(request)
    found = _sandbox(request)
    if found is None:
        return fail(404, "no sandbox has this id")
    journal = state.world.ctx.journal
    detail = sandbox_detail(
        state.world, found, journal.events, journal.origin, state.preview_origin()
    )
    detail["now"] = state.world.ctx.clock.time()
    return web.json_response(detail)


async def download(request: web.Request) -> web.StreamResponse:
    found = _sandbox(request)
    path = request.query.get("path", "")
    if found is None:
        return fail(404, "no sandbox has this id")
    try:
        target = check_abs_path(path)
    except ApiError:
        return fail(400, "path must be an absolute path")
    if found.status == "destroyed":
        return fail(409, "the sandbox is destroyed")
    try:
        # Read as an observer: no bandwidth is counted, unlike the API's download.
        data = found.disk.read_file(target)
    except OSError:  # missing, a directory, or refused by the runtime
        return fail(404, "no file at this path")
    if len(data) > MAX_DOWNLOAD:
        return fail(413, "the file is larger than the dashboard downloads")
    name = path.rstrip("/").rsplit("/", 1)[-1] or "file"
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:100] or "file"
    return web.Response(
        body=data,
        content_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{safe}"'},
    )


async def output(request: web.Request) -> web.StreamResponse:
    found = _sandbox(request)
    process = found.processes.get(request.match_info["process_id"]) if found else None
    if process is None:
        return fail(404, "no process has this id")
    raw = request.query.get("after", "0")
    if not raw.isdigit() or len(raw) > 12:
        return fail(400, "after must be a whole number")
    return await process_output(request, process, int(raw))


def describe(action: dict[str, object]) -> str:
    """``http_error status=503``: an action's JSON on one line, unset fields left out."""
    words = [str(action.get("type", ""))]
    words += [f"{k}={v}" for k, v in action.items() if k != "type" and v is not None]
    return " ".join(words)


def _fault_texts(request: web.Request) -> dict[str, str]:
    """Each fault the registry knows (armed, or in a firing), by id, described."""
    registry = _state(request).faults
    texts = {str(f.fault_id): describe(action_to_json(f.action)) for f in registry.fired}
    for fault in registry.faults:
        texts[str(registry.fault_id(fault))] = describe(action_to_json(fault.action))
    return texts


async def journal(request: web.Request) -> web.Response:
    try:
        query = JournalQuery.parse(request.query)
    except QueryError as exc:
        return fail(400, str(exc))
    world = _state(request).world
    names = {s.name: s.id for s in world.sandboxes() if s.name}
    page = journal_page(
        world.ctx.journal,
        query,
        names=names,
        operations=_OPERATIONS,
        faults=_fault_texts(request),
        index=request.app[ROWS_KEY],
    )
    return web.json_response(page)


async def journal_event(request: web.Request) -> web.Response:
    raw = request.match_info["index"]
    if not raw.isdigit() or len(raw) > 12:
        return fail(400, "index must be a whole number")
    detail = entry_detail(_state(request).world.ctx.journal, int(raw), _fault_texts(request))
    if detail is None:
        return fail(404, "this event is no longer in the journal")
    return web.json_response(detail)


async def faults(request: web.Request) -> web.Response:
    """Armed faults (those with calls left), used-up ones, and the firings newest first with
    their fake time since the journal's start."""
    state = _state(request)
    registry = state.faults
    origin = state.world.ctx.journal.origin
    armed: list[dict[str, object]] = []
    used: list[dict[str, object]] = []
    for fault in registry.faults:
        data = fault_to_json(registry, fault)
        spent = fault.times is not None and registry.fire_count(fault) >= fault.times
        (used if spent else armed).append(data)
    fired = []
    for firing in reversed(registry.fired):
        data = firing_to_json(firing)
        data["t"] = round(firing.at - origin, 6)
        fired.append(data)
    return web.json_response({"faults": armed, "used_up": used, "fired": fired})


async def account_resources(request: web.Request) -> web.Response:
    world = _state(request).world
    now = world.ctx.clock.now()
    data = resources(world, now)
    upcoming = next_build_change(world, now)
    if upcoming is not None:
        request.app[HUB_KEY].remind(upcoming)
    return web.json_response({"accounts": data})


async def events(request: web.Request) -> web.StreamResponse:
    """The live stream; without a session one ``logged_out`` event and the end (a 401 to an
    EventSource is an error in the browser's console, and it would not say why)."""
    if request.app[SESSIONS_KEY].csrf(request) is None:
        response = await sse_response(request)
        await response.write(b"event: logged_out\ndata: {}\n\n")
        await response.write_eof()
        return response
    return await request.app[HUB_KEY].stream(request)


def api_routes(prefix: str) -> list[web.RouteDef]:
    """The API under ``prefix`` (``/_fake/ui/api``); all need a session."""
    sb = prefix + "/sandboxes/{sandbox_id}"
    return [
        web.get(prefix + "/session", session),
        web.get(prefix + "/overview", overview),
        web.get(sb, sandbox),
        web.get(sb + "/file", download),
        web.get(sb + "/processes/{process_id}/output", output),
        web.get(sb + "/shell", terminal),
        web.get(prefix + "/journal", journal),
        web.get(prefix + "/journal/{index}", journal_event),
        web.get(prefix + "/faults", faults),
        web.get(prefix + "/resources", account_resources),
        web.get(prefix + "/events", events),
    ]
