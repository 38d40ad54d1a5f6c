"""Computer use as the handlers call it: on the sandbox's real desktop where its runtime runs
one (the process runtime's X server, ``runtime.desktop``), else on the synthetic ``Desktop``.

Requests are checked by ``Desktop`` either way (one set of rules and messages); on a real
desktop the checked input is then done by the X server, and what is read (screenshot, windows,
cursor, clipboard) comes from it. What a real desktop cannot do answers 409
``runtime_unsupported``: more screens (Xvfb runs one), a size past the largest its frame
buffer holds (a resize is RandR's, up to the size Xvfb started with), and ``open``
(desktop:1's image has no browser or file manager).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fake_server.models.errors import BadRequest, Conflict, NotFound
from fake_server.models.resources.desktop import (
    MAX_HEIGHT,
    MAX_WIDTH,
    Window,
    int_field,
    screen_size,
)
from fake_server.models.resources.desktop_render import (
    checked_region,
    window_region,
)
from fake_server.models.resources.desktop_render import screenshot as render_png
from fake_server.runtime.api import FeatureUnavailable
from fake_server.runtime.argv import MAX_ARG_BYTES
from fake_server.runtime.desktop import (
    DesktopFailed,
    LiveDesktop,
    LiveWindow,
    NoSuchWindow,
    NotInstalled,
    UnknownKey,
    live_desktop,
)

if TYPE_CHECKING:
    from fake_server.models.resources.desktop import Desktop, Screen
    from fake_server.models.resources.desktop_render import Region

__all__ = [
    "act", "clipboard", "cursor", "focused", "launch", "listing", "no_vnc", "open_target",
    "resize_screen", "screenshot",
    "send_input", "set_clipboard", "synthetic_screens", "window",
]  # fmt: skip

_WINDOW_ID = re.compile(r"0x[0-9a-f]{1,8}")
#: Why a real desktop refuses what only the synthetic one does.
ONE_SCREEN = "the process runtime's desktop has one screen (screen-0)"
NO_VNC = "the process runtime's desktop serves no VNC (screenshots and input are real)"
NO_OPENER = "desktop:1 on the process runtime has no browser or file manager; launch a program"


def _window_id(window_id: str) -> str:
    """An X window id as the window list gives them (``0x00600001``), else 404 before any
    program runs."""
    if _WINDOW_ID.fullmatch(window_id) is None:
        raise NotFound("window not found", code="window_not_found")
    return window_id


def _passable(value: str, field: str) -> None:
    """400 for what a program cannot get as an argument (input goes to xdotool as one)."""
    if "\x00" in value:
        raise BadRequest("must not contain NUL", field=field)
    if len(value.encode("utf-8", "surrogatepass")) > MAX_ARG_BYTES:
        raise BadRequest(
            f"is longer than {MAX_ARG_BYTES} bytes, the most Linux passes to a program "
            "(MAX_ARG_STRLEN)",
            field=field,
        )


def live(desktop: Desktop) -> LiveDesktop | None:
    """The sandbox's real desktop, ``None`` for the synthetic one (bashkit)."""
    primary = desktop.screens[0]
    try:
        return live_desktop(desktop.machine, desktop.clock, primary.width, primary.height)
    except FeatureUnavailable as exc:
        raise Conflict(str(exc), code="runtime_unsupported") from None


async def _call(awaitable: Any) -> Any:
    """Await a real desktop's answer, turning its errors into the API's."""
    try:
        return await awaitable
    except NoSuchWindow:
        raise NotFound("window not found", code="window_not_found") from None
    except UnknownKey as exc:
        raise BadRequest(f"unknown key name {str(exc)!r}", field="keys") from None
    except NotInstalled as exc:
        raise NotFound(
            f"application not installed; installed: {', '.join(exc.installed)}"
        ) from None
    except DesktopFailed as exc:
        raise Conflict(str(exc), code="desktop_failed") from None


def _window(found: LiveWindow) -> Window:
    return Window(
        found.id, found.title, found.application, found.x, found.y,
        found.width, found.height, 0, found.state,
    )  # fmt: skip


def synthetic_screens(desktop: Desktop) -> None:
    """409 where the desktop is real: screens are created, resized and deleted only on the
    synthetic one."""
    if live(desktop) is not None:
        raise Conflict(ONE_SCREEN, code="runtime_unsupported")


async def resize_screen(desktop: Desktop, screen_id: str, body: dict[str, Any]) -> Screen:
    """Resize a screen: on a real desktop the X server's screen first (RandR), within the
    largest size it can take (409 ``runtime_unsupported`` past it)."""
    real = live(desktop)
    if real is not None:
        desktop.screen(screen_id)  # 404 for a screen it does not have
        width, height = screen_size(body)
        most = real.max_size
        if width > most[0] or height > most[1]:
            raise Conflict(
                f"the process runtime's desktop is at most {most[0]}x{most[1]}",
                code="runtime_unsupported",
            )
        await _call(real.resize(width, height))
    return desktop.resize_screen(screen_id, body)


def no_vnc(desktop: Desktop) -> None:
    """409 where the desktop is real: nothing would serve a noVNC URL."""
    if live(desktop) is not None:
        raise Conflict(NO_VNC, code="runtime_unsupported")


async def screenshot(
    desktop: Desktop, screen: Screen, region: Region | None, window_id: str
) -> bytes:
    real = live(desktop)
    if real is None:
        return render_png(desktop, screen, region=region, window_id=window_id)
    if window_id:  # the window's pixels on the screen, as the synthetic desktop crops them
        region = window_region(await window(desktop, screen, window_id), screen)
    whole = (0, 0, screen.width, screen.height)
    return bytes(await _call(real.screenshot(checked_region(region or whole, screen))))


async def send_input(desktop: Desktop, screen: Screen, kind: str, body: dict[str, Any]) -> None:
    """Check and record the input (``Desktop``), then do it on the real desktop, if any."""
    real = live(desktop)
    delay = None
    if real is not None:  # what the program cannot take is refused before anything is done
        values: list[tuple[object, str]] = [(body.get("text"), "text")]
        keys = body.get("keys")
        if isinstance(keys, list):
            values += [(key, "keys") for key in keys]
        for value, field in values:
            if isinstance(value, str):
                _passable(value, field)
        if kind == "type" and body.get("delay_in_ms"):
            delay = int_field(body, "delay_in_ms", 0, 1000)
    recorded = len(desktop.events)
    if kind == "move":
        desktop.move(screen, body)
    elif kind == "click":
        desktop.click(screen, body)
    elif kind == "scroll":
        desktop.scroll(screen, body)
    elif kind == "drag":
        desktop.drag(screen, body)
    elif kind in ("mouse_down", "mouse_up"):
        desktop.button(screen, body, down=kind == "mouse_down")
    elif kind == "type":
        desktop.type(screen, body)
    else:
        desktop.keys(screen, body, kind)
    if real is None:
        return
    event = dict(desktop.events[recorded])
    if delay is not None:
        event["delay_in_ms"] = delay
    await _call(real.apply(event))


async def cursor(desktop: Desktop, screen: Screen) -> tuple[int, int]:
    real = live(desktop)
    return screen.cursor if real is None else tuple(await _call(real.cursor()))


async def clipboard(desktop: Desktop) -> str:
    real = live(desktop)
    return desktop.clipboard if real is None else str(await _call(real.clipboard()))


async def set_clipboard(desktop: Desktop, screen: Screen, text: str) -> None:
    desktop.clipboard = text
    desktop.record(screen, "clipboard", text=text)
    real = live(desktop)
    if real is not None:
        await _call(real.set_clipboard(text))


async def open_target(desktop: Desktop, screen: Screen, body: dict[str, Any]) -> Window:
    if live(desktop) is not None:
        raise Conflict(NO_OPENER, code="runtime_unsupported")
    return desktop.open(screen, body)


async def launch(desktop: Desktop, screen: Screen, body: dict[str, Any]) -> Window:
    real = live(desktop)
    if real is None:
        return desktop.launch(screen, body)
    app, uri = body.get("application"), body.get("uri") or ""
    if not isinstance(app, str) or not app:
        raise BadRequest("is required", field="application")
    if not isinstance(uri, str):
        raise BadRequest("must be a string", field="uri")
    _passable(app, "application")
    _passable(uri, "uri")
    desktop.record(screen, "launch", application=app, uri=uri)
    return _window(await _call(real.launch([app, *([uri] if uri else [])])))


async def listing(desktop: Desktop, screen: Screen, application: str = "") -> list[Window]:
    real = live(desktop)
    if real is None:
        return desktop.listing(screen, application)
    found = await _call(real.windows())
    return [_window(w) for w in found if not application or w.application == application]


async def window(desktop: Desktop, screen: Screen, window_id: str) -> Window:
    real = live(desktop)
    if real is None:
        return desktop.window(screen, window_id)
    _window_id(window_id)
    for found in await _call(real.windows()):
        if found.id == window_id:
            return _window(found)
    raise NotFound("window not found", code="window_not_found")


async def focused(desktop: Desktop, screen: Screen) -> Window:
    real = live(desktop)
    if real is None:
        current = desktop.focused(screen)
    else:
        windows = [w for w in await _call(real.windows()) if w.focused]
        current = _window(windows[0]) if windows else None
    if current is None:
        raise NotFound("no window has the focus", code="window_not_found")
    return current


async def act(
    desktop: Desktop, screen: Screen, window_id: str, action: str, body: dict[str, Any]
) -> Window:
    real = live(desktop)
    if real is None:
        return desktop.act(screen, window_id, action, body)
    _window_id(window_id)
    numbers: list[int] = []
    if action == "move":
        numbers = [
            int_field(body, "x", -MAX_WIDTH, MAX_WIDTH),
            int_field(body, "y", -MAX_HEIGHT, MAX_HEIGHT),
        ]
    elif action == "resize":
        numbers = [int_field(body, "width", 1, MAX_WIDTH), int_field(body, "height", 1, MAX_HEIGHT)]
    desktop.record(screen, f"window_{action}", window=window_id)
    return _window(await _call(real.act(window_id, action, numbers)))
