"""The fake's HTTP layer: app factory, typed state keys, stream writers (fault seams)."""

from __future__ import annotations

from fake_server.http.app import CLIENT_MAX_SIZE, create_app
from fake_server.http.keys import (
    ACCOUNT_KEY,
    BACKEND_KEY,
    ERRORS_KEY,
    FAKE_KEY,
    OPERATION_KEY,
    STREAM_KEY,
    STREAM_WRAPPERS_KEY,
    WORLD_KEY,
)
from fake_server.http.routes import ROUTES
from fake_server.http.streams import BodyWriter, FrameWriter

__all__ = [
    "ACCOUNT_KEY",
    "BACKEND_KEY",
    "CLIENT_MAX_SIZE",
    "ERRORS_KEY",
    "FAKE_KEY",
    "OPERATION_KEY",
    "ROUTES",
    "STREAM_KEY",
    "STREAM_WRAPPERS_KEY",
    "WORLD_KEY",
    "BodyWriter",
    "FrameWriter",
    "create_app",
]
