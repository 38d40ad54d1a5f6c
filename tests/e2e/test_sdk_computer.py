"""Computer use on a desktop:1 sandbox through the official SDK: screens and noVNC, PNG
screenshots (regions, windows), cursor, clicks, scrolls, keys, clipboard, windows."""

from __future__ import annotations

import io
import struct
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from createos import APIError
from createos.models import (
    ComputerButtonRequest,
    ComputerClickRequest,
    ComputerCreateScreenRequest,
    ComputerDragRequest,
    ComputerLaunchRequest,
    ComputerListWindowsOptions,
    ComputerMouseButton,
    ComputerOpenRequest,
    ComputerPoint,
    ComputerScreenID,
    ComputerScreenOptions,
    ComputerScreenshotOptions,
    ComputerScrollDirection,
    ComputerScrollRequest,
    ComputerTypeRequest,
    ComputerWindowMoveRequest,
    ComputerWindowResizeRequest,
)
from PIL import Image

if TYPE_CHECKING:
    from collections.abc import Callable

    from createos.instance import SandboxInstance
    from createos.services import ComputerService

    from fake_server.models.account import Account
    from fake_server.models.resources.desktop import Desktop

S0 = ComputerScreenOptions(screen_id=ComputerScreenID.SCREEN_0)


@pytest.fixture(name="desktop")
def _desktop(running: Callable[..., SandboxInstance]) -> SandboxInstance:
    return running(rootfs="desktop:1", shape="s-2vcpu-4gb")


def _state(account: Account, sandbox: SandboxInstance) -> Desktop:
    return account.resources.desktops[sandbox.id]


def _png(computer: ComputerService, options: ComputerScreenshotOptions) -> Image.Image:
    with computer.screenshot(options) as shot:
        payload = shot.read()
    assert payload[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(io.BytesIO(payload))
    assert image.size == struct.unpack(">II", payload[16:24])  # what the SDK example reads
    return image.convert("RGB")


def _error(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    return caught.value


def test_screens_geometry_and_novnc(desktop: SandboxInstance) -> None:
    computer = desktop.computer
    geometry = computer.screen(S0)
    assert (geometry.width, geometry.height) == (1280, 800)
    screens = computer.screens.list()
    assert [(s.screen_id, s.display, s.vnc_port, s.novnc_port) for s in screens] == [
        (ComputerScreenID.SCREEN_0, ":0", 5900, 6080)
    ]
    assert computer.screens.get(ComputerScreenID.SCREEN_0) == screens[0]
    second = computer.screens.create(ComputerCreateScreenRequest(width=800, height=600))
    assert (second.screen_id, second.width, second.display) == (
        ComputerScreenID.SCREEN_1,
        800,
        ":1",
    )
    resized = computer.screens.resize(
        ComputerScreenID.SCREEN_1, ComputerCreateScreenRequest(width=1024, height=768)
    )
    assert (resized.width, resized.height) == (1024, 768)
    one = ComputerScreenOptions(screen_id=ComputerScreenID.SCREEN_1)
    assert (computer.screen(one).width, computer.screen(one).height) == (1024, 768)
    connection = computer.screens.connect(ComputerScreenID.SCREEN_1)
    assert connection.url.startswith("https://")
    assert connection.token in connection.url
    assert (connection.port, connection.path) == (6081, "/vnc.html")
    created = desktop.refresh().data.created_at
    assert connection.expires_at is not None
    assert created is not None
    assert connection.expires_at - created >= timedelta(minutes=5)
    computer.screens.delete(ComputerScreenID.SCREEN_1)
    assert [s.screen_id for s in computer.screens.list()] == [ComputerScreenID.SCREEN_0]
    primary = _error(lambda: computer.screens.delete(ComputerScreenID.SCREEN_0))
    assert primary.status_code == 409
    assert "the primary screen cannot be deleted" in str(primary)
    gone = _error(lambda: computer.screens.get(ComputerScreenID.SCREEN_1))
    assert gone.status_code == 404


def test_screenshots_have_the_right_size_and_show_windows(desktop: SandboxInstance) -> None:
    computer = desktop.computer
    empty = _png(computer, ComputerScreenshotOptions(screen_id=ComputerScreenID.SCREEN_0))
    assert empty.size == (1280, 800)
    assert empty.getpixel((640, 400)) == (38, 70, 110)
    computer.open(ComputerOpenRequest(target="https://example.com"))
    shown = _png(computer, ComputerScreenshotOptions())
    assert shown.getpixel((400, 300)) == (250, 250, 250)  # the window's body
    assert shown.getpixel((400, 10)) == (52, 101, 164)  # its focused title bar
    region = _png(computer, ComputerScreenshotOptions(x=0, y=0, width=240, height=160))
    assert region.size == (240, 160)
    window = computer.windows.list()[0]
    only = _png(computer, ComputerScreenshotOptions(window_id=window.id))
    geometry = computer.windows.geometry(window.id)
    assert only.size == (geometry.width, geometry.height)
    too_big = _error(
        lambda: _png(computer, ComputerScreenshotOptions(x=1200, y=0, width=200, height=10))
    )
    assert too_big.status_code == 400


def test_cursor_clicks_scrolls_and_drags(desktop: SandboxInstance, account: Account) -> None:
    computer = desktop.computer
    computer.mouse.move(ComputerPoint(x=426, y=266), S0)
    assert computer.cursor(S0) == ComputerPoint(x=426, y=266)
    computer.mouse.click(
        ComputerClickRequest(button=ComputerMouseButton.RIGHT, x=10, y=20, count=2)
    )
    computer.mouse.scroll(ComputerScrollRequest(direction=ComputerScrollDirection.UP, amount=3))
    computer.mouse.down(ComputerButtonRequest(button=ComputerMouseButton.LEFT))
    computer.mouse.up(ComputerButtonRequest(button=ComputerMouseButton.LEFT))
    computer.mouse.drag(
        ComputerDragRequest(from_=ComputerPoint(x=5, y=5), to=ComputerPoint(x=300, y=200))
    )
    assert computer.cursor() == ComputerPoint(x=300, y=200)
    events = _state(account, desktop).events
    assert [e["kind"] for e in events] == [
        "move",
        "click",
        "scroll",
        "mouse_down",
        "mouse_up",
        "drag",
    ]
    assert events[1] == {
        "kind": "click",
        "screen": "screen-0",
        "x": 10,
        "y": 20,
        "button": "right",
        "count": 2,
    }
    assert events[2]["direction"] == "up"
    outside = _error(lambda: computer.mouse.move(ComputerPoint(x=1280, y=0)))
    assert str(outside).endswith("x: must be between 0 and 1279")
    assert computer.cursor() == ComputerPoint(x=300, y=200)


def test_keyboard_and_clipboard(desktop: SandboxInstance, account: Account) -> None:
    computer = desktop.computer
    computer.launch(ComputerLaunchRequest(application="gedit"))
    computer.keyboard.type(ComputerTypeRequest(text="hello desktop", delay_in_ms=5))
    computer.keyboard.press(["ctrl", "s"])
    computer.keyboard.down(["shift"])
    assert _state(account, desktop).screens[0].keys == {"shift"}
    computer.keyboard.up(["shift"])
    state = _state(account, desktop)
    assert state.screens[0].keys == set()
    assert state.windows[-1].text == "hello desktop"
    assert [e["kind"] for e in state.events][-4:] == ["type", "key_press", "key_down", "key_up"]
    computer.set_clipboard("CreateOS desktop", S0)
    assert computer.clipboard(S0).text == "CreateOS desktop"
    empty_keys = _error(lambda: computer.keyboard.press([]))
    assert str(empty_keys).endswith("keys: must be a non-empty list of key names")


def test_windows_focus_move_resize_and_close(desktop: SandboxInstance) -> None:
    windows = desktop.computer.windows
    desktop.computer.open(ComputerOpenRequest(target="https://example.com/docs"))
    desktop.computer.launch(ComputerLaunchRequest(application="xterm"))
    first, second = windows.list()
    assert first.title == "example.com - Mozilla Firefox"
    assert second.title == "XTerm"
    assert [w.id for w in windows.list(ComputerListWindowsOptions(application="xterm"))] == [
        second.id
    ]
    assert windows.current().id == second.id
    windows.focus(first.id)
    assert windows.current().id == first.id
    assert windows.get(second.id).title == "XTerm"
    windows.move(first.id, ComputerWindowMoveRequest(x=100, y=50))
    windows.resize(first.id, ComputerWindowResizeRequest(width=400, height=300))
    geometry = windows.geometry(first.id)
    assert (geometry.x, geometry.y, geometry.width, geometry.height) == (100, 50, 400, 300)
    windows.maximize(first.id)
    maximized = windows.geometry(first.id)
    assert (maximized.x, maximized.y, maximized.width, maximized.height) == (0, 0, 1280, 800)
    windows.restore(first.id)
    assert windows.geometry(first.id).width == 400
    windows.minimize(first.id)
    assert windows.current().id == second.id
    windows.close(second.id)
    assert [w.id for w in windows.list()] == [first.id]
    assert _error(lambda: windows.get(second.id)).status_code == 404
    unknown_app = _error(lambda: desktop.computer.launch(ComputerLaunchRequest(application="doom")))
    assert unknown_app.status_code == 404


def test_a_drag_on_a_title_bar_moves_the_window(desktop: SandboxInstance) -> None:
    computer = desktop.computer
    computer.launch(ComputerLaunchRequest(application="nautilus", uri="file:///home"))
    window = computer.windows.list()[0]
    computer.mouse.drag(
        ComputerDragRequest(from_=ComputerPoint(x=50, y=10), to=ComputerPoint(x=150, y=60))
    )
    geometry = computer.windows.geometry(window.id)
    assert (geometry.x, geometry.y) == (100, 50)


def test_non_desktop_and_stopped_sandboxes(running: Callable[..., SandboxInstance]) -> None:
    plain = running()
    error = _error(plain.computer.screen)
    assert error.status_code == 409
    assert "computer use needs a desktop rootfs (desktop:1)" in str(error)
    desktop = running(rootfs="desktop:1")
    desktop.pause()
    desktop.wait_until_paused()
    assert _error(desktop.computer.cursor).status_code == 409


def test_sessions_of_destroyed_sandboxes_are_dropped(
    running: Callable[..., SandboxInstance], account: Account
) -> None:
    first, second = running(rootfs="desktop:1"), running(rootfs="desktop:1")
    first.computer.screen()
    first.destroy()
    first.wait_until_destroyed()
    second.computer.screen()
    assert list(account.resources.desktops) == [second.id]
