"""Computer use on a real desktop: desktop:1 on the process runtime runs Xvfb, evilwm and
xdotool from Debian 13 (issue 30 item 14), driven through the official Python SDK.

Programs really draw, read keys and get clicks: xterm runs a command typed into it, and a
small X client of the test's (python3-xlib, in the sandbox) paints its window a colour and
writes down every button press it gets. The API's shapes are the SDK's ``ComputerWindow``,
``ComputerWindowGeometry``, ``ComputerPoint`` and PNG bytes (createos ``services.py``).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import struct
from typing import TYPE_CHECKING

import httpx
import pytest
from createos import APIError, Client, CreateSandboxRequest, RunCommandRequest
from createos.models import (
    ComputerClickRequest,
    ComputerCreateScreenRequest,
    ComputerLaunchRequest,
    ComputerListWindowsOptions,
    ComputerMouseButton,
    ComputerOpenRequest,
    ComputerScreenID,
    ComputerScreenshotOptions,
    ComputerTypeRequest,
    ComputerWindowMoveRequest,
    TemplateCreateRequest,
)
from PIL import Image

from fake_server import FakeCreateOS
from fake_server.models.resources import desktop_live
from fake_server.models.transitions import TransitionPolicy
from fake_server.runtime.process.containment import cgroups
from fake_server.runtime.process.images import desktop_image
from fake_server.runtime.process.images.image import cache_dir
from fake_server.runtime.process.sandbox.machine import NO_DESKTOP
from tests._helpers import followed_build_log, settled
from tests._needs import needs
from tests.fake_server._process_runtime import bwrap_descendants

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from createos.instance import SandboxInstance
    from createos.services import ComputerService

_MISSING = (
    "root"
    if os.geteuid() != 0
    else None
    if desktop_image.built(cache_dir()) is not None
    else "desktop:1's X desktop image"
)
pytestmark = [pytest.mark.reliability, needs(_MISSING, "createos-fake image (as root)")]

#: The test's X client: a window of one colour that writes down each button press it gets.
CANVAS = """
from Xlib import X, display
d = display.Display()
s = d.screen()
red = s.default_colormap.alloc_color(0xDDDD, 0x2222, 0x2222).pixel
w = s.root.create_window(0, 0, 300, 200, 0, s.root_depth, X.InputOutput, X.CopyFromParent,
                         background_pixel=red, event_mask=X.ButtonPressMask)
w.set_wm_name("createos canvas")
w.set_wm_class("canvas", "Canvas")
w.map()
d.flush()
while True:
    e = d.next_event()
    if e.type == X.ButtonPress:
        with open("/root/clicks", "a") as f:
            f.write(f"{e.detail} {e.event_x} {e.event_y}\\n")
"""
RED = (0xDD, 0x22, 0x22)


@pytest.fixture(name="fake", scope="module")
def _fake() -> Iterator[FakeCreateOS]:
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate(), runtime="process").start()
    yield fake
    fake.close()
    assert settled(lambda: not bwrap_descendants())  # Xvfb and its clients went with it


@pytest.fixture(name="sdk")
def _sdk(fake: FakeCreateOS) -> Iterator[Client]:
    fake.reset()
    with Client(fake.api_key, base_url=fake.url) as client:
        yield client
    assert fake.errors == [], fake.errors


@pytest.fixture(name="desktop")
def _desktop(sdk: Client) -> SandboxInstance:
    sandbox = sdk.create_sandbox(CreateSandboxRequest(shape="s-2vcpu-4gb", rootfs="desktop:1"))
    sandbox.wait_until_running()
    return sandbox


def _sh(sandbox: SandboxInstance, script: str) -> str:
    request = RunCommandRequest(command="bash", arguments=["-c", script])
    result = sandbox.run_command(request).result
    assert result.exit_code == 0, result.standard_error
    return result.standard_output


def _png(computer: ComputerService, options: ComputerScreenshotOptions | None = None) -> bytes:
    with computer.screenshot(options) as shot:
        payload = shot.read()
    assert payload[:8] == b"\x89PNG\r\n\x1a\n"
    return payload


def _image(payload: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(payload))
    assert image.size == struct.unpack(">II", payload[16:24])
    return image.convert("RGB")


def _error(call: Callable[[], object]) -> tuple[int, dict[str, object]]:
    with pytest.raises(APIError) as caught:
        call()
    body = json.loads(caught.value.body)
    return caught.value.status_code, body


def test_xterm_runs_a_command_typed_into_it(desktop: SandboxInstance) -> None:
    computer = desktop.computer
    before = _png(computer)
    assert _image(before).size == (1280, 800)  # the sandbox's screen-0
    computer.launch(ComputerLaunchRequest(application="xterm"))
    [xterm] = computer.windows.list(ComputerListWindowsOptions(application="xterm"))
    assert xterm.title == "xterm"
    assert computer.windows.current().id == xterm.id
    geometry = computer.windows.geometry(xterm.id)
    assert geometry.width > 100
    assert geometry.height > 100
    centre = (geometry.x + geometry.width // 2, geometry.y + geometry.height // 2)
    computer.mouse.click(ComputerClickRequest(x=centre[0], y=centre[1]))
    assert (computer.cursor().x, computer.cursor().y) == centre  # the X server's pointer
    computer.keyboard.type(ComputerTypeRequest(text="echo typed-through-x > /root/typed"))
    computer.keyboard.press(["Return"])
    assert settled(lambda: _sh(desktop, "cat /root/typed 2>/dev/null || true") != "")
    assert _sh(desktop, "cat /root/typed") == "typed-through-x\n"
    after = _png(computer)
    assert _image(after).size == (1280, 800)
    assert after != before  # xterm drew its window and what was typed
    # the clipboard is the X server's: a program of the sandbox reads what the API copied
    assert computer.clipboard().text == ""
    computer.set_clipboard("copied through the API")
    assert computer.clipboard().text == "copied through the API"
    assert _sh(desktop, "DISPLAY=:0 xclip -selection clipboard -o") == "copied through the API"
    # the programs are the sandbox's own processes: Xvfb, the window manager, xterm
    processes = _sh(desktop, "ps -eo comm=").split()
    assert {"Xvfb", "evilwm", "xterm"} <= set(processes)


def _window(fake: FakeCreateOS, sandbox: SandboxInstance, window_id: str) -> dict[str, object]:
    """The window as the API answers it (the SDK's ``ComputerWindow`` drops ``state``)."""
    url = f"{fake.url}/v1/sandboxes/{sandbox.id}/computer/windows/{window_id}"
    answer = httpx.get(url, headers={"X-Api-Key": fake.api_key}, timeout=30)
    assert answer.status_code == 200
    data: dict[str, object] = answer.json()["data"]
    return data


def test_a_click_reaches_the_program_and_its_colour_is_in_the_screenshot(
    fake: FakeCreateOS, desktop: SandboxInstance
) -> None:
    computer = desktop.computer
    _sh(desktop, f"cat > /root/canvas.py <<'EOF'\n{CANVAS}EOF")
    computer.launch(ComputerLaunchRequest(application="python3", uri="/root/canvas.py"))
    [canvas] = computer.windows.list(ComputerListWindowsOptions(application="canvas"))
    assert canvas.title == "createos canvas"
    geometry = computer.windows.geometry(canvas.id)
    assert (geometry.width, geometry.height) == (300, 200)
    shot = _image(_png(computer, ComputerScreenshotOptions(window_id=canvas.id)))
    assert shot.size == (300, 200)
    assert shot.getpixel((150, 100)) == RED
    screen = _image(_png(computer))
    assert screen.getpixel((geometry.x + 150, geometry.y + 100)) == RED
    region = _image(
        _png(computer, ComputerScreenshotOptions(x=geometry.x, y=geometry.y, width=20, height=10))
    )
    assert region.size == (20, 10)
    assert region.getcolors() == [(200, RED)]
    computer.mouse.click(ComputerClickRequest(x=geometry.x + 10, y=geometry.y + 20))
    assert settled(lambda: _sh(desktop, "cat /root/clicks 2>/dev/null || true") != "")
    assert _sh(desktop, "cat /root/clicks") == "1 10 20\n"  # button 1, in the window's pixels

    # the desktop stops and resumes with the sandbox, as its other processes do
    desktop.pause()
    desktop.wait_until_paused()
    desktop.resume()
    desktop.wait_until_running()
    computer.mouse.click(
        ComputerClickRequest(x=geometry.x + 30, y=geometry.y + 40, button=ComputerMouseButton.RIGHT)
    )
    assert settled(lambda: _sh(desktop, "wc -l < /root/clicks") == "2\n")
    assert _sh(desktop, "cat /root/clicks") == "1 10 20\n3 30 40\n"

    # window actions go through the window manager; the answers are what it did
    computer.windows.move(canvas.id, ComputerWindowMoveRequest(x=500, y=400))
    moved = computer.windows.geometry(canvas.id)
    assert (moved.x, moved.y, moved.width, moved.height) == (500, 400, 300, 200)
    computer.windows.maximize(canvas.id)
    assert _window(fake, desktop, canvas.id)["state"] == "maximized"
    full = computer.windows.geometry(canvas.id)
    assert (full.x, full.y, full.width, full.height) == (0, 0, 1280, 800)
    computer.windows.restore(canvas.id)
    assert _window(fake, desktop, canvas.id)["state"] == "normal"
    computer.windows.minimize(canvas.id)
    assert _window(fake, desktop, canvas.id)["state"] == "minimized"
    assert _image(_png(computer)).getpixel((650, 500)) != RED  # no longer drawn
    computer.windows.focus(canvas.id)
    assert _window(fake, desktop, canvas.id)["state"] == "normal"
    assert computer.windows.current().id == canvas.id
    computer.windows.close(canvas.id)
    assert computer.windows.list(ComputerListWindowsOptions(application="canvas")) == []


def test_errors_say_exactly_what_is_wrong(desktop: SandboxInstance) -> None:
    computer = desktop.computer
    assert _error(lambda: computer.mouse.click(ComputerClickRequest(x=1280, y=10))) == (
        400,
        {"status": "fail", "data": {"x": "must be between 0 and 1279"}},
    )
    assert _error(lambda: computer.keyboard.press(["ctrl", "nosuchkey"])) == (
        400,
        {"status": "fail", "data": {"keys": "unknown key name 'nosuchkey'"}},
    )
    assert _error(lambda: computer.windows.get("0x7fffffff")) == (
        404,
        {"status": "fail", "data": {"code": "window_not_found", "message": "window not found"}},
    )
    assert _error(lambda: computer.launch(ComputerLaunchRequest(application="firefox"))) == (
        404,
        {
            "status": "fail",
            "data": {"code": "not_found", "message": "application not installed; installed: xterm"},
        },
    )
    assert _error(lambda: computer.launch(ComputerLaunchRequest(application="false"))) == (
        409,
        {
            "status": "fail",
            "data": {
                "code": "desktop_failed",
                "message": "the program exited with status 1 before opening a window",
            },
        },
    )
    unsupported = [
        (
            lambda: computer.open(ComputerOpenRequest(target="https://example.com")),
            desktop_live.NO_OPENER,
        ),
        (lambda: computer.screens.create(ComputerCreateScreenRequest()), desktop_live.ONE_SCREEN),
        (lambda: computer.screens.connect(ComputerScreenID.SCREEN_0), desktop_live.NO_VNC),
    ]
    for call, message in unsupported:
        assert _error(call) == (
            409,
            {"status": "fail", "data": {"code": "runtime_unsupported", "message": message}},
        )
    # nothing was drawn by the refused calls: no window opened
    assert computer.windows.list() == []


def test_the_x_server_is_the_sandboxs_own(fake: FakeCreateOS, desktop: SandboxInstance) -> None:
    """No TCP listener, its socket in the sandbox's /tmp and network namespace only, its
    processes in the sandbox's cgroup (the shape's limits)."""
    host_sockets = _x_sockets("/proc/net/unix")
    assert _image(_png(desktop.computer)).size == (1280, 800)  # the X server runs
    assert _sh(desktop, "ls -A /tmp/.X11-unix") == "X0\n"
    assert _sh(desktop, "grep -o '@/tmp/.X11-unix/X0' /proc/net/unix | sort -u") == (
        "@/tmp/.X11-unix/X0\n"
    )
    assert (
        _sh(desktop, "exec 3<>/dev/tcp/127.0.0.1/6000 && echo open || echo refused") == "refused\n"
    )
    assert _x_sockets("/proc/net/unix") == host_sockets  # none of the sandbox's on the host
    assert "DISPLAY" not in _sh(desktop, "env")  # commands see no display but their own
    if isinstance(cgroups.hierarchy(), str):
        return  # no cgroup controller can be used here (tests/security/test_limits.py)
    machine = fake.runtimes.get("process").machines[desktop.id]
    assert {"Xvfb", "evilwm"} <= {_comm(pid) for pid in machine.cgroup.members()}


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:  # ended meanwhile
        return ""


def _x_sockets(table: str) -> list[str]:
    with open(table) as lines:
        return sorted(line.split()[-1] for line in lines if ".X11-unix" in line)


def test_without_the_desktop_image_computer_use_says_so(fake: FakeCreateOS, sdk: Client) -> None:
    """A process runtime whose image has no X desktop answers 409, never a synthetic
    success."""
    runtime = fake.runtimes.get("process")
    system = runtime.system
    runtime.system = dataclasses.replace(system, desktop_root=None)
    try:
        sandbox = sdk.create_sandbox(CreateSandboxRequest(shape="s-2vcpu-4gb", rootfs="desktop:1"))
        sandbox.wait_until_running()
        expected = (
            409,
            {"status": "fail", "data": {"code": "runtime_unsupported", "message": NO_DESKTOP}},
        )
        assert _error(sandbox.computer.screen) == expected
        assert _error(lambda: _png(sandbox.computer)) == expected
        assert (
            _error(lambda: sandbox.computer.mouse.click(ComputerClickRequest(x=1, y=1))) == expected
        )
    finally:
        runtime.system = system


def test_a_fork_starts_a_desktop_of_its_own(desktop: SandboxInstance) -> None:
    """A fork copies the files, not the processes (as the service's fork of a VM's disk): its
    first computer-use call starts its own X server over the copied /tmp."""
    computer = desktop.computer
    computer.launch(ComputerLaunchRequest(application="xterm"))
    desktop.pause()
    desktop.wait_until_paused()
    fork = desktop.fork()
    fork.wait_until_running()
    assert _sh(fork, "ls -A /tmp/.X11-unix") == "X0\n"  # the source's socket, copied
    assert fork.computer.windows.list() == []
    assert _image(_png(fork.computer)).size == (1280, 800)
    fork.computer.launch(ComputerLaunchRequest(application="xterm"))
    assert [w.title for w in fork.computer.windows.list()] == ["xterm"]
    desktop.resume()
    desktop.wait_until_running()
    assert [w.title for w in computer.windows.list()] == ["xterm"]  # its own, still there


def test_devbox_sandboxes_boot_the_tree_without_the_desktop(
    fake: FakeCreateOS, sdk: Client, desktop: SandboxInstance
) -> None:
    """devbox:1 boots the plain Debian tree, desktop:1 the one with the X desktop (issue 30);
    computer use on devbox:1 answers what it answers on bashkit for a sandbox without a
    desktop (409 ``not_a_desktop``, ``tests/e2e/test_sdk_computer.py``), and a fork or a
    template keeps the tree of its source or base."""
    devbox = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", rootfs="devbox:1"))
    devbox.wait_until_running()
    look = "for p in Xvfb xdotool evilwm xterm python3; do command -v $p || echo no $p; done"
    assert _sh(devbox, look) == "no Xvfb\nno xdotool\nno evilwm\nno xterm\n/usr/bin/python3\n"
    assert _sh(desktop, look) == (
        "/usr/bin/Xvfb\n/usr/bin/xdotool\n/usr/bin/evilwm\n/usr/bin/xterm\n/usr/bin/python3\n"
    )
    runtime = fake.runtimes.get("process")
    assert (runtime.machines[devbox.id].tree, runtime.machines[desktop.id].tree) == (
        "devbox", "desktop"
    )  # fmt: skip
    not_a_desktop = (
        409,
        {
            "status": "fail",
            "data": {
                "code": "not_a_desktop",
                "message": "computer use needs a desktop rootfs (desktop:1)",
            },
        },
    )
    assert _error(devbox.computer.screen) == not_a_desktop
    assert _error(lambda: _png(devbox.computer)) == not_a_desktop
    assert _error(devbox.computer.windows.list) == not_a_desktop
    # desktop:1's screenshot is the X server's screen (its root window's pixels)
    assert _image(_png(desktop.computer)).size == (1280, 800)
    assert "Xvfb" in _sh(desktop, "ps -eo comm=").split()
    # a template built on desktop:1 boots its tree, one on devbox:1 the plain one
    for name, dockerfile in (
        ("on-desktop", "FROM nodeops/sandbox:desktop\nRUN echo built > /opt/built\n"),
        ("on-devbox", "FROM nodeops/sandbox:debian\nRUN echo built > /opt/built\n"),
    ):
        template = sdk.templates.create(TemplateCreateRequest(name=name, dockerfile=dockerfile))
        events = followed_build_log(fake.url, fake.api_key, template.id)
        assert events[-1] == {"final": True, "status": "ready", "attempt": 1}
    on_desktop = sdk.create_sandbox(CreateSandboxRequest(shape="s-2vcpu-4gb", rootfs="on-desktop"))
    on_devbox = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", rootfs="on-devbox"))
    on_desktop.wait_until_running()
    on_devbox.wait_until_running()
    assert _sh(on_desktop, "cat /opt/built; command -v Xvfb") == "built\n/usr/bin/Xvfb\n"
    assert _sh(on_devbox, "cat /opt/built; command -v Xvfb || true") == "built\n"
    assert _image(_png(on_desktop.computer)).size == (1280, 800)
    # a fork keeps its source's tree
    devbox.pause()
    devbox.wait_until_paused()
    fork = devbox.fork()
    fork.wait_until_running()
    assert _sh(fork, "command -v Xvfb || echo none") == "none\n"


def test_a_screen_resize_changes_the_x_servers_screen_and_keeps_the_windows(
    desktop: SandboxInstance,
) -> None:
    """The Python SDK's ``screens.resize`` on the real desktop: RandR resizes the X server's
    screen (programs of the sandbox see it), screenshots and the reported size follow, the
    windows stay; past the frame buffer Xvfb started with, 409 saying how large it can be."""
    computer = desktop.computer
    computer.launch(ComputerLaunchRequest(application="xterm"))
    root_size = (
        'python3 -c \'from Xlib import display; g = display.Display(":0").screen(); '
        "print(g.width_in_pixels, g.height_in_pixels)'"
    )
    assert _sh(desktop, root_size) == "1280 800\n"
    for width, height in ((1024, 600), (1920, 1080)):
        resized = computer.screens.resize(
            ComputerScreenID.SCREEN_0, ComputerCreateScreenRequest(width=width, height=height)
        )
        assert (resized.width, resized.height) == (width, height)
        assert (computer.screen().width, computer.screen().height) == (width, height)
        assert _image(_png(computer)).size == (width, height)
        assert _sh(desktop, root_size) == f"{width} {height}\n"
    [xterm] = computer.windows.list()
    computer.windows.maximize(xterm.id)

    def size() -> tuple[int, int]:
        geometry = computer.windows.geometry(xterm.id)
        return geometry.width, geometry.height

    assert settled(lambda: size() == (1920, 1080))  # the window manager saw the new size
    too_big = ComputerCreateScreenRequest(width=2561, height=1080)
    assert _error(lambda: computer.screens.resize(ComputerScreenID.SCREEN_0, too_big)) == (
        409,
        {
            "status": "fail",
            "data": {
                "code": "runtime_unsupported",
                "message": "the process runtime's desktop is at most 2560x1600",
            },
        },
    )
    assert _image(_png(computer)).size == (1920, 1080)  # unchanged
