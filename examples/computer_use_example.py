"""Computer use on desktop:1: open a page, screenshot it, click, type, and read what the
desktop recorded."""

import io

from createos import (
    ComputerClickRequest,
    ComputerOpenRequest,
    ComputerScreenshotOptions,
    ComputerTypeRequest,
    CreateSandboxRequest,
)
from PIL import Image


def test_desktop(createos_sdk, createos_fake):
    sandbox = createos_sdk.create_sandbox(
        CreateSandboxRequest(shape="s-2vcpu-4gb", rootfs="desktop:1")
    )
    sandbox.wait_until_running()
    computer = sandbox.computer

    computer.open(ComputerOpenRequest(target="https://example.com"))
    window = computer.windows.current()
    assert window.title == "example.com - Mozilla Firefox"

    with computer.screenshot(ComputerScreenshotOptions(width=240, height=160)) as shot:
        image = Image.open(io.BytesIO(shot.read()))
    assert image.size == (240, 160)

    computer.mouse.click(ComputerClickRequest(x=100, y=100))
    computer.keyboard.type(ComputerTypeRequest(text="hello"))
    assert computer.cursor().x == 100

    account = createos_fake.world.account_for_key(createos_fake.api_key)
    events = account.resources.desktops[sandbox.id].events
    assert [e["kind"] for e in events] == ["open", "click", "type"]
    assert computer.screens.connect("screen-0").url.startswith("https://")
    sandbox.destroy()
