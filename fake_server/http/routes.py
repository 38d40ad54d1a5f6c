"""The route table with its handlers: ``fake_server.operations``'s rows, bound."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server import operations
from fake_server.http.handlers import (
    access_tokens,
    commands,
    computer,
    disks,
    ingress,
    meta,
    metrics,
    networks,
    processes,
    sandbox_admin,
    sandboxes,
    shells,
    templates,
    tunnels,
)
from fake_server.operations import CONTROL_KEY_HEADER, KEY_HEADERS

if TYPE_CHECKING:
    from types import ModuleType

    from aiohttp import web
    from aiohttp.typedefs import Handler

    from fake_server.operations import Operation


__all__ = [
    "CONTROL_KEY_HEADER",
    "CONTROL_PREFIX",
    "KEY_HEADERS",
    "ROUTES",
    "UNIMPLEMENTED",
    "bind",
]

#: Where the fake's own control API lives (``http.control.api``, ``http.control.faults``).
CONTROL_PREFIX = "/_fake"

#: The modules a route's handler reference (``"family.name"``) names.
_FAMILIES: dict[str, ModuleType] = {
    module.__name__.rpartition(".")[2]: module
    for module in (
        access_tokens,
        commands,
        ingress,
        meta,
        metrics,
        processes,
        computer,
        disks,
        networks,
        templates,
        sandbox_admin,
        sandboxes,
        shells,
        tunnels,
    )
}


def bind(rows: tuple[Operation, ...]) -> tuple[tuple[str, str, str, Handler], ...]:
    """``(method, path, operation, handler)`` of ``fake_server.operations``'s records, each
    handler reference made the handler."""
    bound = []
    for op in rows:
        family, _, name = op.handler.partition(".")
        bound.append((op.method, op.path, op.name, getattr(_FAMILIES[family], name)))
    return tuple(bound)


#: ``(method, path, operation, handler)`` of every route (``fake_server.operations.ROUTES``).
ROUTES: tuple[tuple[str, str, str, Handler], ...] = bind(operations.ROUTES)

#: Real API routes on paths the fake serves with other methods: without these they would be
#: 405 (which claims the method does not exist); they answer 501 ``not_implemented`` instead.
#: Unknown paths need no entry: every unmatched path is a 501.
UNIMPLEMENTED: tuple[tuple[str, str, str], ...] = ()


def is_control(request: web.Request) -> bool:
    """Whether ``request`` is for the control API (matched or not)."""
    path = request.path
    return path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/")
