"""desktop:1's real desktop on the process runtime: Xvfb, evilwm and xdotool in the sandbox.

The X server starts on the sandbox's first computer-use call (not at create: a desktop sandbox
nobody drives costs no X server), as a daemon of the sandbox, started by an exec of the fake's
own: so it runs in the sandbox's namespaces, under its seccomp filter and cgroups (its memory
counts against the shape), stops and resumes with it and dies with it, as every process the
sandbox starts does (``guest``). It listens on ``/tmp/.X11-unix/X0`` of the sandbox's own
root and on the abstract socket of the sandbox's network namespace only (``-nolisten tcp``):
the host's X server, if any, is out of reach (nothing of the host's ``/tmp`` is in the
sandbox), and nothing outside the sandbox can reach this one. ``DISPLAY=:0`` is what programs
of the sandbox use.

Every call is one exec in the sandbox: ``xdotool`` for input (clicks, moves, keys, typing,
scrolling go to whatever the pointer or the focus is on, as on a real desktop), and
``xguest`` (the guest's ``python3`` with ``python3-xlib``) for what is read: the screen's
pixels (the PNG is encoded here, with Pillow), the window manager's window list, key names,
window actions, launching a program and waiting for its window.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image

from fake_server.runtime.desktop import (
    DesktopFailed,
    LiveWindow,
    NoSuchWindow,
    NotInstalled,
    UnknownKey,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.runtime.api import Runner

__all__ = ["DISPLAY", "MAX_SIZE", "XDesktop"]

DISPLAY = ":0"
_GUEST = (Path(__file__).with_name("xguest.py")).read_text()
_ENV = {"DISPLAY": DISPLAY}
#: The X server's frame buffer: the largest its screen can be resized to (RandR cannot grow
#: it past the size Xvfb started with). 2560x1600 holds the common sizes up to WQXGA; its
#: pages count against the sandbox's memory only once drawn (Xvfb's PSS at 1280x800 is the
#: same as with a 1280x800 buffer), and a full screen of it is 16 MB (4K would be 33 MB, the
#: synthetic desktop's 8K 132 MB).
MAX_SIZE = (2560, 1600)
#: Seconds the start waits for the X server and the window manager (inside the sandbox).
_START_WAIT = 20
#: Starts what is not running: the X server, then the window manager ($0: ``xguest``). The
#: server never resets (``-noreset``): by default it does when its last client leaves, and
#: the window manager connecting just as the first check left would find no display.
_START = """
if ! pgrep -x Xvfb >/dev/null; then
    rm -f /tmp/.X0-lock /tmp/.X11-unix/X0
    setsid nohup Xvfb :0 -screen 0 {max_width}x{max_height}x24 -nolisten tcp -noreset \
        >/var/log/Xvfb.0.log 2>&1 </dev/null &
fi
python3 -c "$0" ready {wait} || exit 4
python3 -c "$0" size {width} {height} || exit 9
if ! pgrep -x evilwm >/dev/null; then
    setsid nohup evilwm -fn fixed >/var/log/evilwm.log 2>&1 </dev/null &
fi
exec python3 -c "$0" ready {wait} wm
"""
#: ``xguest keys`` checks the names, then xdotool presses them as one chord ($0: ``xguest``).
_KEYS = 'python3 -c "$0" keys "$@" && exec xdotool {verb} -- "$(IFS=+; printf %s "$*")"'
_BUTTONS = {"left": "1", "middle": "2", "right": "3"}
#: What each ``xguest`` operation does, for the message when it fails.
_DOING = {
    "shot": "read the screen", "windows": "list the windows", "cursor": "read the pointer",
    "launch": "start the program", "act": "act on the window", "size": "resize the screen",
}  # fmt: skip
_NO_SUCH_WINDOW, _UNKNOWN_KEY, _NO_X, _NOT_INSTALLED, _NO_WINDOW = 5, 3, 4, 6, 7
#: xdotool's pauses between typed characters and between the clicks of a double or triple
#: click (its own defaults).
TYPE_DELAY_MS, CLICK_DELAY_MS = 12, 100


class XDesktop:
    """One sandbox's X desktop (``runtime.desktop.LiveDesktop``), started on first use."""

    max_size = MAX_SIZE

    def __init__(self, runner: Callable[[], Runner], width: int, height: int) -> None:
        self._runner = runner
        self.width, self.height = width, height
        self._lock = asyncio.Lock()
        self._started = False

    async def _exec(
        self, argv: list[str], stdin: bytes | None = None, *, starting: bool = False
    ) -> tuple[int, bytes]:
        out, err = bytearray(), bytearray()

        async def collect_out(data: bytes) -> None:
            out.extend(data)

        async def collect_err(data: bytes) -> None:
            err.extend(data)

        code = await self._runner().run(
            argv, env=_ENV, stdin=stdin, on_stdout=collect_out, on_stderr=collect_err
        )
        if code == _NO_X:
            self._started = False  # killed from inside, say: started again on the next call
            why = err.decode(errors="replace").strip().splitlines()
            if starting:  # xguest's own line: the X server or the window manager
                raise DesktopFailed(f"the desktop did not start: {why[-1] if why else code}")
            raise DesktopFailed("the desktop's X server is not running")
        return code, bytes(out)

    async def start(self) -> None:
        """Start the X server and the window manager unless they run."""
        async with self._lock:
            if self._started:
                return
            script = _START.format(
                width=self.width,
                height=self.height,
                max_width=MAX_SIZE[0],
                max_height=MAX_SIZE[1],
                wait=_START_WAIT,
            )
            code, _ = await self._exec(["bash", "-c", script, _GUEST], starting=True)
            if code != 0:
                raise DesktopFailed(f"the desktop did not start (status {code})")
            self._started = True

    async def _guest(self, *args: str, also: tuple[int, ...] = ()) -> tuple[int, bytes]:
        """``xguest``'s output; its statuses other than 0 and ``also`` raise."""
        await self.start()
        code, out = await self._exec(["python3", "-c", _GUEST, *args])
        if code == _NO_SUCH_WINDOW:
            raise NoSuchWindow(args[1] if len(args) > 1 else "")
        if code != 0 and code not in also:
            raise DesktopFailed(f"the desktop could not {_DOING[args[0]]} (status {code})")
        return code, out

    async def _xdotool(self, *args: str) -> None:
        await self.start()
        code, _ = await self._exec(["xdotool", *args])
        if code != 0:
            raise DesktopFailed(f"xdotool failed (status {code})")

    async def screenshot(self, region: tuple[int, int, int, int]) -> bytes:
        _, out = await self._guest("shot", *(str(n) for n in region))
        header, _, pixels = out.partition(b"\n")
        width, height = (int(n) for n in header.split())
        if len(pixels) < width * height * 4:
            raise DesktopFailed("the screen could not be read")
        image = Image.frombytes("RGB", (width, height), pixels, "raw", "BGRX")
        png = io.BytesIO()
        image.save(png, format="PNG", compress_level=1)
        return png.getvalue()

    async def resize(self, width: int, height: int) -> None:
        """Set the screen's size (RandR; a start after a restart from inside takes it too)."""
        self.width, self.height = width, height
        await self._guest("size", str(width), str(height))

    async def windows(self) -> list[LiveWindow]:
        _, out = await self._guest("windows")
        return [LiveWindow(**w) for w in json.loads(out)]

    async def cursor(self) -> tuple[int, int]:
        _, out = await self._guest("cursor")
        x, y = out.split()
        return int(x), int(y)

    async def apply(self, event: dict[str, Any]) -> None:
        """Do what ``models.resources.desktop`` recorded (its checks passed): ``event`` is the
        record."""
        kind = event["kind"]
        if kind in ("key_press", "key_down", "key_up"):
            verb = {"key_press": "key", "key_down": "keydown", "key_up": "keyup"}[kind]
            await self.start()
            code, out = await self._exec(
                ["bash", "-c", _KEYS.format(verb=verb), _GUEST, *event["keys"]]
            )
            if code == _UNKNOWN_KEY:
                raise UnknownKey(out.decode(errors="replace").strip())
            if code != 0:
                raise DesktopFailed(f"xdotool failed (status {code})")
            return
        await self._xdotool(*_input_args(event))

    async def launch(self, argv: list[str]) -> LiveWindow:
        code, out = await self._guest("launch", *argv, also=(_NOT_INSTALLED, _NO_WINDOW))
        text = out.decode(errors="replace").strip()
        if code == _NOT_INSTALLED:
            raise NotInstalled([name for name in text.split(",") if name])
        if code != 0:
            raise DesktopFailed(text or f"the program did not start (status {code})")
        return LiveWindow(**json.loads(text))

    async def act(self, window_id: str, action: str, numbers: list[int]) -> LiveWindow:
        _, out = await self._guest("act", window_id, action, *(str(n) for n in numbers))
        return LiveWindow(**json.loads(out))

    async def clipboard(self) -> str:
        await self.start()
        code, out = await self._exec(["xclip", "-selection", "clipboard", "-o"])
        return out.decode(errors="replace") if code == 0 else ""  # 1: nothing copied yet

    async def set_clipboard(self, text: str) -> None:
        await self.start()
        # xclip stays in the background holding the selection, as a copying program does
        command = "xclip -selection clipboard -i >/dev/null 2>&1"
        code, _ = await self._exec(["bash", "-c", command], stdin=text.encode())
        if code != 0:
            raise DesktopFailed(f"xclip failed (status {code})")


def _input_args(event: dict[str, Any]) -> list[str]:
    """xdotool's arguments for a recorded input event."""
    kind = event["kind"]
    if kind == "move":
        return ["mousemove", str(event["x"]), str(event["y"])]
    if kind == "click":
        point = [str(event["x"]), str(event["y"])]
        button, count = _BUTTONS[event["button"]], str(event["count"])
        # xdotool waits its --delay after every click, a single one too
        delay = "0" if count == "1" else str(CLICK_DELAY_MS)
        return ["mousemove", *point, "click", "--repeat", count, "--delay", delay, button]
    if kind == "scroll":
        button = "4" if event["direction"] == "up" else "5"
        return ["click", "--repeat", str(event["amount"]), button]
    if kind == "drag":
        start, end = event["from"], event["to"]
        return [
            "mousemove", str(start[0]), str(start[1]), "mousedown", "1",
            "mousemove", str(end[0]), str(end[1]), "mouseup", "1",
        ]  # fmt: skip
    if kind in ("mouse_down", "mouse_up"):
        return ["mousedown" if kind == "mouse_down" else "mouseup", _BUTTONS[event["button"]]]
    if kind == "type":
        delay = str(event.get("delay_in_ms", TYPE_DELAY_MS))
        return ["type", "--delay", delay, "--", event["text"]]
    raise ValueError(f"not an input event: {kind}")
