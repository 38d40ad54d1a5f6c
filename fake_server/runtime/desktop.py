"""A real desktop a runtime runs for computer use (the process runtime's X server:
``runtime.process.desktop.xdesktop``), as the models see it.

bashkit has none: its sandboxes keep the synthetic desktop of ``models.resources.desktop``. The
errors carry what the API answers; the models turn them into its status codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.clock import Clock

__all__ = [
    "DesktopFailed",
    "LiveDesktop",
    "LiveWindow",
    "NoSuchWindow",
    "NotInstalled",
    "UnknownKey",
    "live_desktop",
]


@dataclass(frozen=True, slots=True)
class LiveWindow:
    """A top-level window of the X server, as its window manager lists it."""

    id: str
    title: str
    application: str
    x: int
    y: int
    width: int
    height: int
    state: str  # normal, minimized, maximized
    focused: bool


class UnknownKey(ValueError):
    """A key name no keysym has (400 on ``keys``)."""


class NoSuchWindow(LookupError):
    """No top-level window has that id (404 ``window_not_found``)."""


class NotInstalled(LookupError):
    """The program is not installed; ``installed``: the known applications that are."""

    def __init__(self, installed: list[str]) -> None:
        super().__init__(installed)
        self.installed = installed


class DesktopFailed(RuntimeError):
    """The desktop could not do it (no X server, a program that opened no window): 409."""


class LiveDesktop(Protocol):
    """One sandbox's desktop: screen-0 of ``width`` × ``height``, started on first use, which
    ``resize`` changes up to ``max_size`` (the windows stay)."""

    max_size: tuple[int, int]

    async def resize(self, width: int, height: int) -> None: ...

    async def screenshot(self, region: tuple[int, int, int, int]) -> bytes: ...
    async def windows(self) -> list[LiveWindow]: ...
    async def cursor(self) -> tuple[int, int]: ...
    async def apply(self, event: dict[str, Any]) -> None: ...
    async def launch(self, argv: list[str]) -> LiveWindow: ...
    async def act(self, window_id: str, action: str, numbers: list[int]) -> LiveWindow: ...
    async def clipboard(self) -> str: ...
    async def set_clipboard(self, text: str) -> None: ...


def live_desktop(machine: object, clock: Clock, width: int, height: int) -> LiveDesktop | None:
    """The machine's real desktop (started on first use), ``None`` where its runtime keeps the
    synthetic one (bashkit); ``FeatureUnavailable`` where it should have one and cannot."""
    make: Callable[[Clock, int, int], LiveDesktop] | None = getattr(machine, "desktop", None)
    return None if make is None else make(clock, width, height)
