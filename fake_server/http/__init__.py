"""The fake's HTTP layer: app factory and its state, typed keys, stream writers (fault seams),
the control API, rate limiting and the fault middleware."""

from __future__ import annotations

from fake_server.http.app import CLIENT_MAX_SIZE, create_app, create_preview_app
from fake_server.http.keys import (
    ACCOUNT_KEY,
    BACKEND_KEY,
    ERRORS_KEY,
    OPERATION_KEY,
    STATE_KEY,
    STREAM_KEY,
    STREAM_WRAPPERS_KEY,
    WORLD_KEY,
)
from fake_server.http.routes import ROUTES
from fake_server.http.state import AppState
from fake_server.http.streams.writers import BodyWriter, FrameWriter

__all__ = [
    "ACCOUNT_KEY",
    "BACKEND_KEY",
    "CLIENT_MAX_SIZE",
    "ERRORS_KEY",
    "OPERATION_KEY",
    "ROUTES",
    "STATE_KEY",
    "STREAM_KEY",
    "STREAM_WRAPPERS_KEY",
    "WORLD_KEY",
    "AppState",
    "BodyWriter",
    "FrameWriter",
    "create_app",
    "create_preview_app",
]
