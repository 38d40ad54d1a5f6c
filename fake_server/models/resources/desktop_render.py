"""Draws a ``Desktop`` screen as PNG with Pillow: wallpaper, windows (title bar, title, typed
text) bottom to top, then the cursor. Regions and single windows are crops of the frame."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from PIL import Image, ImageDraw

from fake_server.models.errors import BadRequest
from fake_server.models.resources.desktop import TITLE_BAR

if TYPE_CHECKING:
    from fake_server.models.resources.desktop import Desktop, Screen, Window

__all__ = ["Region", "checked_region", "screenshot", "window_region"]

Region = tuple[int, int, int, int]  # x, y, width, height

# A palette image (one byte a pixel) encodes several times faster than RGB.
_COLOURS = (
    (38, 70, 110),  # wallpaper
    (200, 200, 200),  # window frame
    (52, 101, 164),  # focused title bar
    (120, 120, 120),  # other title bars
    (250, 250, 250),  # window body
    (20, 20, 20),  # text
    (255, 255, 255),  # white
    (0, 0, 0),  # black
)
WALLPAPER, FRAME, TITLE_FOCUSED, TITLE_OTHER, BODY, TEXT, WHITE, BLACK = range(8)
_PALETTE = [channel for colour in _COLOURS for channel in colour]
_CURSOR = ((0, 0), (0, 16), (4, 12), (7, 18), (9, 17), (6, 11), (11, 11))


def render(desktop: Desktop, screen: Screen) -> Image.Image:
    image = Image.new("P", (screen.width, screen.height), WALLPAPER)
    image.putpalette(_PALETTE)
    draw = ImageDraw.Draw(image)
    windows = [w for w in desktop.listing(screen) if w.state != "minimized"]
    for index, window in enumerate(windows):
        focused = index == len(windows) - 1
        box = (window.x, window.y, window.x + window.width - 1, window.y + window.height - 1)
        draw.rectangle(box, fill=BODY, outline=FRAME)
        bar = (box[0], box[1], box[2], min(box[3], box[1] + TITLE_BAR - 1))
        draw.rectangle(bar, fill=TITLE_FOCUSED if focused else TITLE_OTHER)
        draw.text((window.x + 8, window.y + 8), window.title[:120], fill=WHITE)
        if window.text:
            lines = window.text.splitlines()[-20:]
            for row, line in enumerate(lines):
                draw.text(
                    (window.x + 8, window.y + TITLE_BAR + 6 + 12 * row), line[:200], fill=TEXT
                )
    x, y = screen.cursor
    draw.polygon([(x + dx, y + dy) for dx, dy in _CURSOR], fill=WHITE, outline=BLACK)
    return image


def window_region(window: Window, screen: Screen) -> Region:
    """The part of the screen ``window`` covers (a minimized or off-screen one is a 400): what
    a window's screenshot shows, on the synthetic desktop and a real one alike."""
    if window.state == "minimized":
        raise BadRequest("window is minimized", field="window_id")
    left, top = max(0, window.x), max(0, window.y)
    right = min(screen.width, window.x + window.width)
    bottom = min(screen.height, window.y + window.height)
    if right <= left or bottom <= top:
        raise BadRequest("window is off screen", field="window_id")
    return (left, top, right - left, bottom - top)


def checked_region(region: Region, screen: Screen) -> Region:
    """``region`` when it lies within the screen, else a 400."""
    x, y, width, height = region
    if width < 1 or height < 1 or x + width > screen.width or y + height > screen.height:
        raise BadRequest(
            f"region must lie within the {screen.width}x{screen.height} screen", field="width"
        )
    return region


def screenshot(
    desktop: Desktop, screen: Screen, *, region: Region | None = None, window_id: str = ""
) -> bytes:
    """PNG bytes of the screen, of ``region`` or of one window (clipped to the screen)."""
    if window_id:
        region = window_region(desktop.window(screen, window_id), screen)
    image = render(desktop, screen)
    if region is not None:
        x, y, width, height = checked_region(region, screen)
        image = image.crop((x, y, x + width, y + height))
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()
