"""Computer use on the wire: windows, their geometry, screens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_server.models.resources.desktop import Screen, Window

__all__ = ["geometry_json", "screen_json", "window_json"]


def window_json(window: Window) -> dict[str, Any]:
    return {
        "id": window.id,
        "title": window.title,
        "application": window.application,
        "state": window.state,
    }


def geometry_json(window: Window) -> dict[str, Any]:
    return {
        "id": window.id,
        "x": window.x,
        "y": window.y,
        "width": window.width,
        "height": window.height,
        "screen": window.screen,
    }


def screen_json(screen: Screen) -> dict[str, Any]:
    return {
        "screen_id": screen.id,
        "display": screen.display,
        "width": screen.width,
        "height": screen.height,
        "vnc_port": screen.vnc_port,
        "novnc_port": screen.novnc_port,
    }
