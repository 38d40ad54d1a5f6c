"""Computer use on a runtime's real desktop, through HTTP, with a stand-in for the X server:
what the models hand it (the checked input), what they make of its answers and errors, and the
409s where a real desktop cannot do what the synthetic one does. The real X server is in
tests/fake_server/runtime/process/desktop/test_process_desktop.py."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import pytest
from PIL import Image

from fake_server.models.resources import desktop_live
from fake_server.models.resources.desktop import Desktop
from fake_server.runtime.api import FeatureUnavailable
from fake_server.runtime.desktop import (
    DesktopFailed,
    LiveWindow,
    NoSuchWindow,
    NotInstalled,
    UnknownKey,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from fake_server import FakeCreateOS
    from fake_server.clock import Clock

pytestmark = pytest.mark.asyncio

XTERM = LiveWindow("0x00600001", "xterm", "xterm", 10, 20, 484, 316, "normal", focused=True)
OTHER = LiveWindow("0x00800001", "canvas", "canvas", 0, 0, 300, 200, "minimized", focused=False)
AWAY = LiveWindow("0x00900001", "away", "canvas", 1300, 0, 100, 100, "normal", focused=False)


class StubDesktop:
    """Answers as the X desktop would; records what it was asked."""

    max_size = (2560, 1600)

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.fail: Exception | None = None

    async def resize(self, width: int, height: int) -> None:
        await self._answer("resize", (width, height))

    async def _answer(self, name: str, argument: Any, value: Any = None) -> Any:
        self.calls.append((name, argument))
        if self.fail is not None:
            raise self.fail
        return value

    async def screenshot(self, region: tuple[int, int, int, int]) -> bytes:
        png = io.BytesIO()
        Image.new("RGB", region[2:], (1, 2, 3)).save(png, format="PNG")
        return bytes(await self._answer("screenshot", region, png.getvalue()))

    async def windows(self) -> list[LiveWindow]:
        return list(await self._answer("windows", None, [XTERM, OTHER, AWAY]))

    async def cursor(self) -> tuple[int, int]:
        return tuple(await self._answer("cursor", None, (7, 8)))  # type: ignore[return-value]

    async def apply(self, event: dict[str, Any]) -> None:
        await self._answer("apply", event)

    async def launch(self, argv: list[str]) -> LiveWindow:
        return LiveWindow(**{**vars_of(XTERM), **await self._answer("launch", argv, {})})

    async def act(self, window_id: str, action: str, numbers: list[int]) -> LiveWindow:
        await self._answer("act", (window_id, action, numbers))
        return XTERM

    async def clipboard(self) -> str:
        return str(await self._answer("clipboard", None, "copied"))

    async def set_clipboard(self, text: str) -> None:
        await self._answer("set_clipboard", text)


def vars_of(window: LiveWindow) -> dict[str, Any]:
    return {name: getattr(window, name) for name in LiveWindow.__dataclass_fields__}


class Machine:
    """A machine whose runtime runs a desktop (``stub``), or cannot (``why``)."""

    def __init__(self, stub: StubDesktop | None, why: str = "") -> None:
        self.stub, self.why = stub, why
        self.sizes: list[tuple[int, int]] = []

    def desktop(self, clock: Clock, width: int, height: int) -> StubDesktop:
        self.sizes.append((width, height))
        if self.stub is None:
            raise FeatureUnavailable(self.why)
        return self.stub


async def _live(
    fake: FakeCreateOS, make_sandbox: Callable[..., Awaitable[str]], machine: Machine
) -> str:
    sandbox_id = await make_sandbox(rootfs="desktop:1")
    account = fake.world.account_for_key(fake.api_key)
    assert account is not None
    account.resources.desktops[sandbox_id] = Desktop(account.ctx, sandbox_id, machine)
    return sandbox_id


def _fail(code: str, message: str) -> dict[str, Any]:
    return {"status": "fail", "data": {"code": code, "message": message}}


async def test_input_is_checked_recorded_and_handed_to_the_desktop(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    stub = StubDesktop()
    machine = Machine(stub)
    base = f"/v1/sandboxes/{await _live(fake, make_sandbox, machine)}/computer"
    bodies = [
        ("/mouse/move", {"x": 5, "y": 6}),
        ("/mouse/click", {"x": 1, "y": 2, "button": "right", "count": 2}),
        ("/mouse/scroll", {"direction": "up", "amount": 3}),
        ("/mouse/drag", {"from": {"x": 1, "y": 1}, "to": {"x": 9, "y": 9}}),
        ("/mouse/down", {}),
        ("/keyboard/type", {"text": "hi\n", "delay_in_ms": 40}),
        ("/keyboard/press", {"keys": ["ctrl", "c"]}),
    ]
    for path, body in bodies:
        answer = await client.post(base + path, json=body)
        assert (answer.status_code, answer.json()) == (
            200,
            {"status": "success", "data": {"ok": True}},
        )
    assert [argument for name, argument in stub.calls] == [
        {"kind": "move", "screen": "screen-0", "x": 5, "y": 6},
        {"kind": "click", "screen": "screen-0", "x": 1, "y": 2, "button": "right", "count": 2},
        {"kind": "scroll", "screen": "screen-0", "direction": "up", "amount": 3},
        {"kind": "drag", "screen": "screen-0", "from": [1, 1], "to": [9, 9]},
        {"kind": "mouse_down", "screen": "screen-0", "button": "left"},
        {"kind": "type", "screen": "screen-0", "text": "hi\n", "delay_in_ms": 40},
        {"kind": "key_press", "screen": "screen-0", "keys": ["ctrl", "c"]},
    ]
    assert set(machine.sizes) == {(1280, 800)}  # the desktop starts at screen-0's size
    # what the checks refuse never reaches the desktop, nor the record
    stub.calls.clear()
    account = fake.world.account_for_key(fake.api_key)
    assert account is not None
    events = next(iter(account.resources.desktops.values())).events
    recorded = len(events)
    refused = [
        ("/mouse/click", {"x": 1280, "y": 0}, {"x": "must be between 0 and 1279"}),
        ("/keyboard/type", {"text": "a\x00b"}, {"text": "must not contain NUL"}),
        ("/keyboard/press", {"keys": ["a\x00"]}, {"keys": "must not contain NUL"}),
        ("/launch", {"application": "xterm\x00"}, {"application": "must not contain NUL"}),
        (
            "/keyboard/type",
            {"text": "é" * 70_000},
            {
                "text": "is longer than 131071 bytes, the most Linux passes to a program "
                "(MAX_ARG_STRLEN)"
            },
        ),
        (
            "/keyboard/type",
            {"text": "x", "delay_in_ms": 5000},
            {"delay_in_ms": "must be between 0 and 1000"},
        ),
    ]
    for path, body, data in refused:
        answer = await client.post(base + path, json=body)
        assert (answer.status_code, answer.json()) == (400, {"status": "fail", "data": data})
    assert stub.calls == []
    assert len(events) == recorded


async def test_what_is_read_comes_from_the_desktop(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    stub = StubDesktop()
    base = f"/v1/sandboxes/{await _live(fake, make_sandbox, Machine(stub))}/computer"
    assert (await client.get(base + "/cursor")).json()["data"] == {"x": 7, "y": 8}
    assert (await client.get(base + "/clipboard")).json()["data"] == {"text": "copied"}
    windows = (await client.get(base + "/windows")).json()["data"]["data"]
    assert windows == [
        {"id": XTERM.id, "title": "xterm", "application": "xterm", "state": "normal"},
        {"id": OTHER.id, "title": "canvas", "application": "canvas", "state": "minimized"},
        {"id": AWAY.id, "title": "away", "application": "canvas", "state": "normal"},
    ]
    only = (await client.get(base + "/windows", params={"application": "canvas"})).json()
    assert [w["id"] for w in only["data"]["data"]] == [OTHER.id, AWAY.id]
    assert (await client.get(base + "/windows/current")).json()["data"]["id"] == XTERM.id
    geometry = (await client.get(f"{base}/windows/{XTERM.id}/geometry")).json()["data"]
    assert geometry == {"id": XTERM.id, "x": 10, "y": 20, "width": 484, "height": 316, "screen": 0}
    shot = await client.get(
        base + "/screenshot", params={"x": 0, "y": 0, "width": 30, "height": 20}
    )
    assert Image.open(io.BytesIO(shot.content)).size == (30, 20)
    window = await client.get(base + "/screenshot", params={"window_id": XTERM.id})
    assert Image.open(io.BytesIO(window.content)).size == (484, 316)
    assert ("screenshot", (10, 20, 484, 316)) in stub.calls  # the window's pixels
    minimized = await client.get(base + "/screenshot", params={"window_id": OTHER.id})
    assert minimized.json() == {"status": "fail", "data": {"window_id": "window is minimized"}}
    away = await client.get(base + "/screenshot", params={"window_id": AWAY.id})
    assert away.json() == {"status": "fail", "data": {"window_id": "window is off screen"}}
    outside = await client.get(base + "/screenshot", params={"x": 1200, "width": 200})
    assert outside.json() == {
        "status": "fail",
        "data": {"width": "region must lie within the 1280x800 screen"},
    }
    moved = await client.post(f"{base}/windows/{XTERM.id}/move", json={"x": 3, "y": 4})
    assert moved.json()["data"]["window"]["id"] == XTERM.id
    assert ("act", (XTERM.id, "move", [3, 4])) in stub.calls
    stub.calls.clear()
    for bad in ("nope", "0x%00", "0x123456789", "-0x1"):
        for answer in (
            await client.get(f"{base}/windows/{bad}"),
            await client.post(f"{base}/windows/{bad}/focus"),
            await client.get(base + "/screenshot", params={"window_id": bad}),
        ):
            assert (answer.status_code, answer.json()) == (
                404,
                _fail("window_not_found", "window not found"),
            )
    assert stub.calls == []  # nothing ran for them
    launched = await client.post(base + "/launch", json={"application": "xterm", "uri": "-hold"})
    assert launched.json()["data"]["window"]["title"] == "xterm"
    assert ("launch", ["xterm", "-hold"]) in stub.calls


@pytest.mark.parametrize(
    ("error", "status", "body"),
    [
        (
            UnknownKey("nosuchkey"),
            400,
            {"status": "fail", "data": {"keys": "unknown key name 'nosuchkey'"}},
        ),
        (NoSuchWindow("0x1"), 404, _fail("window_not_found", "window not found")),
        (
            NotInstalled(["xterm"]),
            404,
            _fail("not_found", "application not installed; installed: xterm"),
        ),
        (
            DesktopFailed("the desktop's X server is not running"),
            409,
            _fail("desktop_failed", "the desktop's X server is not running"),
        ),
    ],
)
async def test_the_desktops_errors_are_the_apis(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
    error: Exception,
    status: int,
    body: dict[str, Any],
) -> None:
    stub = StubDesktop()
    stub.fail = error
    base = f"/v1/sandboxes/{await _live(fake, make_sandbox, Machine(stub))}/computer"
    answer = await client.post(base + "/keyboard/press", json={"keys": ["nosuchkey"]})
    assert (answer.status_code, answer.json()) == (status, body)


async def test_what_only_the_synthetic_desktop_does_is_409(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    stub = StubDesktop()
    base = f"/v1/sandboxes/{await _live(fake, make_sandbox, Machine(stub))}/computer"
    calls = [
        client.post(base + "/open", json={"target": "https://example.com"}),
        client.post(base + "/screens", json={}),
        client.delete(base + "/screens/screen-0"),
        client.get(base + "/screens/screen-0/connect"),
        client.post(base + "/screens/screen-0/resize", json={"width": 2561, "height": 600}),
    ]
    messages = [
        desktop_live.NO_OPENER, desktop_live.ONE_SCREEN, desktop_live.ONE_SCREEN,
        desktop_live.NO_VNC, "the process runtime's desktop is at most 2560x1600",
    ]  # fmt: skip
    for call, message in zip(calls, messages, strict=True):
        answer = await call
        assert (answer.status_code, answer.json()) == (409, _fail("runtime_unsupported", message))
    assert stub.calls == []
    account = fake.world.account_for_key(fake.api_key)
    assert account is not None
    assert [e["kind"] for e in next(iter(account.resources.desktops.values())).events] == []


async def test_a_runtime_that_cannot_run_the_desktop_says_so_on_every_call(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    why = "computer use on the process runtime needs desktop:1's X desktop"
    base = f"/v1/sandboxes/{await _live(fake, make_sandbox, Machine(None, why))}/computer"
    for call in (
        client.get(base + "/screen"),
        client.get(base + "/screenshot"),
        client.get(base + "/windows"),
        client.post(base + "/mouse/click", json={"x": 1, "y": 1}),
    ):
        answer = await call
        assert (answer.status_code, answer.json()) == (409, _fail("runtime_unsupported", why))


async def test_a_resize_sets_the_real_screens_size_and_the_one_the_api_reports(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    """The Python SDK's ``screens.resize`` (``ComputerCreateScreenRequest``) on a real
    desktop: the X server's screen is resized first, then ``screen``, ``screens`` and the
    input bounds follow; a bad size is 400 before the X server is asked."""
    stub = StubDesktop()
    base = f"/v1/sandboxes/{await _live(fake, make_sandbox, Machine(stub))}/computer"
    answer = await client.post(base + "/screens/screen-0/resize", json={"width": 1024})
    assert answer.status_code == 200
    assert (answer.json()["data"]["width"], answer.json()["data"]["height"]) == (1024, 800)
    assert stub.calls == [("resize", (1024, 800))]
    assert (await client.get(base + "/screen")).json()["data"] == {"width": 1024, "height": 800}
    click = await client.post(base + "/mouse/click", json={"x": 1100, "y": 1})
    assert (click.status_code, click.json()) == (
        400,
        {"status": "fail", "data": {"x": "must be between 0 and 1023"}},
    )
    for body, field, message in (
        ({"width": 10}, "width", "must be between 64 and 7680"),
        ({"height": "tall"}, "height", "must be an integer"),
    ):
        refused = await client.post(base + "/screens/screen-0/resize", json=body)
        assert (refused.status_code, refused.json()) == (
            400,
            {"status": "fail", "data": {field: message}},
        )
    unknown = await client.post(base + "/screens/screen-1/resize", json={"width": 800})
    assert (unknown.status_code, unknown.json()) == (
        404,
        _fail("screen_not_found", "screen not found"),
    )
    stub.fail = DesktopFailed("the desktop could not resize the screen (status 1)")
    failed = await client.post(base + "/screens/screen-0/resize", json={"width": 800})
    assert (failed.status_code, failed.json()) == (
        409,
        _fail("desktop_failed", "the desktop could not resize the screen (status 1)"),
    )
    assert (await client.get(base + "/screen")).json()["data"] == {"width": 1024, "height": 800}
    assert stub.calls == [("resize", (1024, 800)), ("resize", (800, 800))]
