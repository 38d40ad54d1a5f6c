"""Routes of the account resources (networks, disks, templates, computer use), bound: the
resource part of ``http.routes.ROUTES``, for the tests and fuzzers that go through them all."""

from __future__ import annotations

from fake_server import operations
from fake_server.http.routes import bind

__all__ = ["RESOURCE_ROUTES"]

#: ``(method, path, operation, handler)`` of ``fake_server.operations.RESOURCE_ROUTES``.
RESOURCE_ROUTES = bind(operations.RESOURCE_ROUTES)
