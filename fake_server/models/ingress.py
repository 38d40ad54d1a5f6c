"""Preview URLs: what answers at ``{origin}/_ingress/{sandbox}/{port}/…``.

The service proxies a preview URL to the port inside the sandbox. The fake's sandboxes run
no network servers yet, so a known, running, ingress-enabled sandbox answers what the
service's proxy answers with nothing listening: a 502 naming the port.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from fake_server.models.errors import BadGateway, NotFound

if TYPE_CHECKING:
    from fake_server.models.account import World

__all__ = ["preview"]


def preview(world: World, sandbox_id: str, port: str) -> NoReturn:
    """Raise what the preview URL answers (a served port would return instead)."""
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise NotFound("no preview URL here: the port must be 1-65535", code="ingress_not_found")
    sandbox = world.find_sandbox(sandbox_id)
    if sandbox is not None:
        sandbox.settle()
    if sandbox is None or sandbox.gone() or not sandbox.ingress_enabled:
        raise NotFound("no sandbox with ingress enabled at this address", code="ingress_not_found")
    if sandbox.status != "running":
        raise BadGateway(f"sandbox is {sandbox.status}; its preview URLs answer once it runs")
    raise BadGateway(f"no server is listening on port {int(port)} in the sandbox")
