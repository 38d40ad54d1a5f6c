"""A virtual desktop for computer use on ``desktop`` sandboxes: screens, windows, a cursor,
a clipboard and a record of every input, which tests read from ``Desktop.events``.

Pure state; ``models.resources.desktop_render`` draws it as PNG. Coordinates are screen pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from fake_server.models.errors import BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    from fake_server.clock import Clock
    from fake_server.models.context import Context

__all__ = ["DESKTOP_ROOTFS", "Desktop", "Screen", "Window", "screen_size"]

#: Rootfs names that boot a graphical session.
DESKTOP_ROOTFS = frozenset({"desktop:1"})
#: Applications ``launch`` knows (what the desktop image ships).
APPLICATIONS = {
    "firefox": "Mozilla Firefox",
    "chromium": "Chromium",
    "xterm": "XTerm",
    "gedit": "Text Editor",
    "nautilus": "Files",
    "code": "Visual Studio Code",
}
MAX_SCREENS = 8
MIN_SIZE, MAX_WIDTH, MAX_HEIGHT = 64, 7680, 4320
DEFAULT_SIZE = (1280, 800)
TITLE_BAR = 28
CONNECT_SECONDS = 300


@dataclass(slots=True)
class Window:
    id: str
    title: str
    application: str
    x: int
    y: int
    width: int
    height: int
    screen: int
    state: str = "normal"  # normal, minimized, maximized
    text: str = ""
    restore_to: tuple[int, int, int, int] | None = None

    def contains(self, x: int, y: int) -> bool:
        return self.state != "minimized" and (
            self.x <= x < self.x + self.width and self.y <= y < self.y + self.height
        )


@dataclass(slots=True)
class Screen:
    index: int
    width: int
    height: int
    cursor: tuple[int, int] = (0, 0)
    buttons: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)

    @property
    def id(self) -> str:
        return f"screen-{self.index}"

    @property
    def display(self) -> str:
        return f":{self.index}"

    @property
    def vnc_port(self) -> int:
        return 5900 + self.index

    @property
    def novnc_port(self) -> int:
        return 6080 + self.index


class Desktop:
    """One sandbox's desktop session."""

    def __init__(self, ctx: Context, sandbox_id: str, machine: object = None) -> None:
        """``machine``: the sandbox's, whose runtime may run a real desktop
        (``models.resources.desktop_live``)."""
        self._ctx = ctx
        self.sandbox_id = sandbox_id
        self.machine = machine
        self.screens: dict[int, Screen] = {0: Screen(0, *DEFAULT_SIZE)}
        self.windows: list[Window] = []  # bottom to top: the last one has the focus
        self.clipboard = ""
        self.events: list[dict[str, Any]] = []
        self._next_window = 1

    @property
    def clock(self) -> Clock:
        return self._ctx.clock

    # -- screens -------------------------------------------------------------------------

    def screen(self, screen_id: str | None) -> Screen:
        if not screen_id:
            return self.screens[0]
        index = _screen_index(screen_id)
        if index not in self.screens:
            raise NotFound("screen not found", code="screen_not_found")
        return self.screens[index]

    def create_screen(self, body: dict[str, Any]) -> Screen:
        width, height = screen_size(body)
        free = [i for i in range(MAX_SCREENS) if i not in self.screens]
        if not free:
            raise Conflict(f"at most {MAX_SCREENS} screens", code="screen_limit")
        screen = Screen(free[0], width, height)
        self.screens[screen.index] = screen
        return screen

    def resize_screen(self, screen_id: str, body: dict[str, Any]) -> Screen:
        screen = self.screen(screen_id)
        screen.width, screen.height = screen_size(body)
        screen.cursor = (
            min(screen.cursor[0], screen.width - 1),
            min(screen.cursor[1], screen.height - 1),
        )
        return screen

    def delete_screen(self, screen_id: str) -> None:
        screen = self.screen(screen_id)
        if screen.index == 0:
            raise Conflict("the primary screen cannot be deleted", code="primary_screen")
        del self.screens[screen.index]
        self.windows = [w for w in self.windows if w.screen != screen.index]

    def connection(self, screen_id: str) -> dict[str, Any]:
        screen = self.screen(screen_id)
        token = f"{self._ctx.ids.ulid().lower()}"
        expires = self._ctx.clock.time() + CONNECT_SECONDS
        host = f"{screen.novnc_port}-{self.sandbox_id.lower()}.sandbox.createos.invalid"
        path = "/vnc.html"
        return {
            "screen_id": screen.id,
            "port": screen.novnc_port,
            "path": path,
            "token": token,
            "expires_at": expires,
            "url": f"https://{host}{path}?autoconnect=1&path=websockify%3Ftoken%3D{token}",
        }

    # -- input -----------------------------------------------------------------------------

    def record(self, screen: Screen, kind: str, **detail: Any) -> None:
        self.events.append({"kind": kind, "screen": screen.id, **detail})

    def move(self, screen: Screen, body: dict[str, Any]) -> None:
        screen.cursor = _point(screen, body)
        self.record(screen, "move", x=screen.cursor[0], y=screen.cursor[1])

    def click(self, screen: Screen, body: dict[str, Any]) -> None:
        if body.get("x") is not None or body.get("y") is not None:
            screen.cursor = _point(screen, body)
        button = _button(body)
        count = body.get("count") or 1
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 3:
            raise BadRequest("must be 1, 2 or 3", field="count")
        hit = self.window_at(screen, *screen.cursor)
        if hit is not None:
            self._raise(hit)
        self.record(
            screen, "click", x=screen.cursor[0], y=screen.cursor[1], button=button, count=count
        )

    def scroll(self, screen: Screen, body: dict[str, Any]) -> None:
        direction = body.get("direction") or "down"
        if direction not in ("up", "down"):
            raise BadRequest("must be up or down", field="direction")
        amount = body.get("amount") or 1
        if isinstance(amount, bool) or not isinstance(amount, int) or not 1 <= amount <= 100:
            raise BadRequest("must be between 1 and 100", field="amount")
        self.record(screen, "scroll", direction=direction, amount=amount)

    def drag(self, screen: Screen, body: dict[str, Any]) -> None:
        start = _point(screen, body.get("from"), "from")
        end = _point(screen, body.get("to"), "to")
        grabbed = self.window_at(screen, *start)
        if grabbed is not None and start[1] < grabbed.y + TITLE_BAR and grabbed.state == "normal":
            grabbed.x += end[0] - start[0]
            grabbed.y += end[1] - start[1]
            self._raise(grabbed)
        screen.cursor = end
        self.record(screen, "drag", **{"from": list(start), "to": list(end)})

    def button(self, screen: Screen, body: dict[str, Any], *, down: bool) -> None:
        button = _button(body)
        (screen.buttons.add if down else screen.buttons.discard)(button)
        self.record(screen, "mouse_down" if down else "mouse_up", button=button)

    def type(self, screen: Screen, body: dict[str, Any]) -> None:
        text = body.get("text")
        if not isinstance(text, str) or not text:
            raise BadRequest("is required", field="text")
        focused = self.focused(screen)
        if focused is not None:
            focused.text = (focused.text + text)[-4096:]
        self.record(screen, "type", text=text)

    def keys(self, screen: Screen, body: dict[str, Any], kind: str) -> None:
        keys = body.get("keys")
        if (
            not isinstance(keys, list)
            or not keys
            or not all(isinstance(k, str) and k for k in keys)
        ):
            raise BadRequest("must be a non-empty list of key names", field="keys")
        if kind == "key_down":
            screen.keys.update(keys)
        elif kind == "key_up":
            screen.keys.difference_update(keys)
        self.record(screen, kind, keys=list(keys))

    # -- windows ---------------------------------------------------------------------------

    def open(self, screen: Screen, body: dict[str, Any]) -> Window:
        target = body.get("target")
        if not isinstance(target, str) or not target.strip():
            raise BadRequest("is required", field="target")
        parts = urlsplit(target)
        if parts.scheme in ("http", "https"):
            title, app = f"{parts.hostname or target} - Mozilla Firefox", "firefox"
        else:
            title, app = f"{target} - Files", "nautilus"
        self.record(screen, "open", target=target)
        return self._new_window(screen, title, app)

    def launch(self, screen: Screen, body: dict[str, Any]) -> Window:
        app = body.get("application")
        if not isinstance(app, str) or not app:
            raise BadRequest("is required", field="application")
        if app not in APPLICATIONS:
            raise NotFound(f"application not installed; installed: {', '.join(APPLICATIONS)}")
        uri = body.get("uri") or ""
        if not isinstance(uri, str):
            raise BadRequest("must be a string", field="uri")
        self.record(screen, "launch", application=app, uri=uri)
        title = APPLICATIONS[app] + (f" - {uri}" if uri else "")
        return self._new_window(screen, title, app)

    def _new_window(self, screen: Screen, title: str, app: str) -> Window:
        offset = 40 * (len(self.windows) % 8)
        width = max(MIN_SIZE, min(screen.width * 2 // 3, screen.width - offset))
        height = max(MIN_SIZE, min(screen.height * 2 // 3, screen.height - offset))
        window = Window(
            f"0x{0x3A00000 + self._next_window:08x}",
            title,
            app,
            offset,
            offset,
            width,
            height,
            screen.index,
        )
        self._next_window += 1
        self.windows.append(window)
        return window

    def listing(self, screen: Screen, application: str = "") -> list[Window]:
        return [
            w
            for w in self.windows
            if w.screen == screen.index and (not application or w.application == application)
        ]

    def window(self, screen: Screen, window_id: str) -> Window:
        for window in self.windows:
            if window.id == window_id and window.screen == screen.index:
                return window
        raise NotFound("window not found", code="window_not_found")

    def focused(self, screen: Screen) -> Window | None:
        visible = [w for w in self.listing(screen) if w.state != "minimized"]
        return visible[-1] if visible else None

    def window_at(self, screen: Screen, x: int, y: int) -> Window | None:
        for window in reversed(self.listing(screen)):
            if window.contains(x, y):
                return window
        return None

    def _raise(self, window: Window) -> None:
        self.windows.remove(window)
        self.windows.append(window)

    def act(self, screen: Screen, window_id: str, action: str, body: dict[str, Any]) -> Window:
        window = self.window(screen, window_id)
        if action == "focus":
            if window.state == "minimized":
                window.state = "normal"
            self._raise(window)
        elif action == "move":
            window.x, window.y = (
                _int(body, "x", -MAX_WIDTH, MAX_WIDTH),
                _int(body, "y", -MAX_HEIGHT, MAX_HEIGHT),
            )
        elif action == "resize":
            window.width = _int(body, "width", 1, MAX_WIDTH)
            window.height = _int(body, "height", 1, MAX_HEIGHT)
        elif action == "maximize":
            if window.state != "maximized":
                window.restore_to = (window.x, window.y, window.width, window.height)
            window.x, window.y, window.width, window.height = 0, 0, screen.width, screen.height
            window.state = "maximized"
            self._raise(window)
        elif action == "minimize":
            window.state = "minimized"
        elif action == "restore":
            if window.state == "maximized" and window.restore_to is not None:
                window.x, window.y, window.width, window.height = window.restore_to
            window.state = "normal"
            self._raise(window)
        elif action == "close":
            self.windows.remove(window)
        self.record(screen, f"window_{action}", window=window.id)
        return window


def _screen_index(screen_id: str) -> int:
    prefix, _, number = screen_id.partition("-")
    if prefix != "screen" or not number.isdigit() or int(number[:3]) >= MAX_SCREENS:
        raise BadRequest("must be screen-0 to screen-7", field="screen_id")
    return int(number)


def int_field(body: Any, name: str, low: int, high: int) -> int:
    """``body[name]``, an integer from ``low`` to ``high`` (400 otherwise)."""
    return _int(body, name, low, high)


def _int(body: Any, name: str, low: int, high: int) -> int:
    value = body.get(name) if isinstance(body, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest("must be an integer", field=name)
    if not low <= value <= high:
        raise BadRequest(f"must be between {low} and {high}", field=name)
    return value


def screen_size(body: dict[str, Any]) -> tuple[int, int]:
    """A screen create's or resize's ``width`` and ``height`` (the defaults for 0 or none;
    400 naming the field outside the bounds)."""
    width = body.get("width") or DEFAULT_SIZE[0]
    height = body.get("height") or DEFAULT_SIZE[1]
    return _int({"width": width}, "width", MIN_SIZE, MAX_WIDTH), _int(
        {"height": height}, "height", MIN_SIZE, MAX_HEIGHT
    )


def _point(screen: Screen, body: Any, name: str = "") -> tuple[int, int]:
    if not isinstance(body, dict):
        raise BadRequest("must be an object with x and y", field=name or "body")
    x = _int(body, "x", 0, screen.width - 1)
    y = _int(body, "y", 0, screen.height - 1)
    return x, y


def _button(body: dict[str, Any]) -> str:
    button = body.get("button") or "left"
    if button not in ("left", "middle", "right"):
        raise BadRequest("must be left, middle or right", field="button")
    return str(button)
