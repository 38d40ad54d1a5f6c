"""Preview URLs: what answers at ``{origin}/_ingress/{sandbox}/{port}/…``.

The service proxies a preview URL to the port inside the sandbox. ``preview()`` decides
whether a request may reach the sandbox at all; the HTTP layer (``http.handlers.ingress``)
then connects to the port through the sandbox's runtime: a process-runtime sandbox's servers
answer (on bashkit, a server the test registered: ``fake.ports``); with nothing listening
the answer is
the service proxy's: a 502 naming the port (``not_listening()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.models.errors import BadGateway, NotFound

if TYPE_CHECKING:
    from fake_server.models.account.world import World
    from fake_server.models.sandbox import Sandbox

__all__ = ["not_listening", "preview"]


def preview(world: World, sandbox_id: str, port: str) -> tuple[Sandbox, int]:
    """The running, ingress-enabled sandbox and port a preview URL names; the error otherwise."""
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise NotFound("no preview URL here: the port must be 1-65535", code="ingress_not_found")
    sandbox = world.find_sandbox(sandbox_id)
    if sandbox is not None:
        sandbox.settle()
    if sandbox is None or sandbox.gone() or not sandbox.ingress_enabled:
        raise NotFound("no sandbox with ingress enabled at this address", code="ingress_not_found")
    if sandbox.status != "running":
        raise BadGateway(f"sandbox is {sandbox.status}; its preview URLs answer once it runs")
    return sandbox, int(port)


def not_listening(port: int) -> BadGateway:
    return BadGateway(f"no server is listening on port {port} in the sandbox")
