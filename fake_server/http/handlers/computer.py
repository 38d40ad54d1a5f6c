"""Handlers for ``/v1/sandboxes/{id}/computer/...``: computer use on desktop sandboxes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.http.wire.common import iso, query_int, read_json
from fake_server.http.wire.computer import geometry_json, screen_json, window_json
from fake_server.models.errors import BadRequest
from fake_server.models.resources import desktop_live

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler

    from fake_server.models.resources.desktop import Desktop, Screen


__all__ = [
    "close_window",
    "focus_window",
    "keyboard_down",
    "keyboard_press",
    "keyboard_type",
    "keyboard_up",
    "maximize_window",
    "minimize_window",
    "mouse_click",
    "mouse_down",
    "mouse_drag",
    "mouse_move",
    "mouse_scroll",
    "mouse_up",
    "move_window",
    "resize_window",
    "restore_window",
]

_INT_QUERY = ("x", "y", "width", "height")


def _desktop(request: web.Request) -> tuple[Desktop, Screen]:
    desktop: Desktop = request[BACKEND_KEY].resources.desktop(sandbox_id(request))
    desktop_live.live(desktop)  # 409 where the runtime should run a desktop and cannot
    return desktop, desktop.screen(request.query.get("screen_id") or None)


def _done(data: dict[str, Any] | None = None) -> web.Response:
    """The ``{"ok": true, ...}`` answer of an action."""
    return ok({"ok": True, **(data or {})})


async def _body(request: web.Request) -> dict[str, Any]:
    return await read_json(request, optional=True)


async def get_screen(request: web.Request) -> web.Response:
    _, screen = _desktop(request)
    return ok({"width": screen.width, "height": screen.height})


async def get_cursor(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    x, y = await desktop_live.cursor(desktop, screen)
    return ok({"x": x, "y": y})


async def get_clipboard(request: web.Request) -> web.Response:
    desktop, _ = _desktop(request)
    return ok({"text": await desktop_live.clipboard(desktop)})


async def set_clipboard(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    text = (await _body(request)).get("text")
    if not isinstance(text, str):
        raise BadRequest("must be a string", field="text")
    await desktop_live.set_clipboard(desktop, screen, text)
    return _done()


async def open_target(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    window = await desktop_live.open_target(desktop, screen, await _body(request))
    return _done({"window": window_json(window)})


async def launch_app(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    window = await desktop_live.launch(desktop, screen, await _body(request))
    return _done({"window": window_json(window)})


async def take_screenshot(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    values = {name: query_int(request, name, -1) for name in _INT_QUERY}
    region = None
    if any(value >= 0 for value in values.values()):
        x, y = max(values["x"], 0), max(values["y"], 0)
        width = values["width"] if values["width"] > 0 else screen.width - x
        height = values["height"] if values["height"] > 0 else screen.height - y
        region = (x, y, width, height)
    window_id = request.query.get("window_id", "")
    png = await desktop_live.screenshot(desktop, screen, region, window_id)
    return web.Response(body=png, content_type="image/png")


def _input(kind: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        desktop, screen = _desktop(request)
        await desktop_live.send_input(desktop, screen, kind, await _body(request))
        return _done()

    return handler


async def list_windows(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    windows = await desktop_live.listing(desktop, screen, request.query.get("application", ""))
    return ok({"data": [window_json(w) for w in windows]})


async def current_window(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    return ok(window_json(await desktop_live.focused(desktop, screen)))


async def get_window(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    window = await desktop_live.window(desktop, screen, request.match_info["window_id"])
    return ok(window_json(window))


async def window_geometry(request: web.Request) -> web.Response:
    desktop, screen = _desktop(request)
    window = await desktop_live.window(desktop, screen, request.match_info["window_id"])
    return ok(geometry_json(window))


def _window_action(action: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        desktop, screen = _desktop(request)
        body = await _body(request)
        window_id = request.match_info["window_id"]
        window = await desktop_live.act(desktop, screen, window_id, action, body)
        return _done({"window": geometry_json(window)})

    return handler


async def list_screens(request: web.Request) -> web.Response:
    desktop, _ = _desktop(request)
    return ok({"data": [screen_json(s) for s in desktop.screens.values()]})


async def create_screen(request: web.Request) -> web.Response:
    desktop, _ = _desktop(request)
    desktop_live.synthetic_screens(desktop)
    screen = desktop.create_screen(await _body(request))
    return ok(screen_json(screen), status=201)


def _screen_of(request: web.Request) -> tuple[Desktop, str]:
    desktop, _ = _desktop(request)
    return desktop, request.match_info["screen_id"]


async def get_screen_by_id(request: web.Request) -> web.Response:
    desktop, screen_id = _screen_of(request)
    return ok(screen_json(desktop.screen(screen_id)))


async def connect_screen(request: web.Request) -> web.Response:
    desktop, screen_id = _screen_of(request)
    desktop_live.no_vnc(desktop)
    data = desktop.connection(screen_id)
    return ok({**data, "expires_at": iso(data["expires_at"])})


async def resize_screen(request: web.Request) -> web.Response:
    desktop, screen_id = _screen_of(request)
    body = await _body(request)
    return ok(screen_json(await desktop_live.resize_screen(desktop, screen_id, body)))


async def delete_screen(request: web.Request) -> web.Response:
    desktop, screen_id = _screen_of(request)
    desktop_live.synthetic_screens(desktop)
    desktop.delete_screen(screen_id)
    return _done()


# The handlers built from one pattern, named by their operation (``fake_server.operations``).
mouse_move = _input("move")
mouse_click = _input("click")
mouse_scroll = _input("scroll")
mouse_drag = _input("drag")
mouse_down = _input("mouse_down")
mouse_up = _input("mouse_up")
keyboard_type = _input("type")
keyboard_press = _input("key_press")
keyboard_down = _input("key_down")
keyboard_up = _input("key_up")
focus_window = _window_action("focus")
move_window = _window_action("move")
resize_window = _window_action("resize")
maximize_window = _window_action("maximize")
minimize_window = _window_action("minimize")
restore_window = _window_action("restore")
close_window = _window_action("close")
