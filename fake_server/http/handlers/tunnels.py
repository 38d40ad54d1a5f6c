"""``POST …/tunnel/{port}``: the connection becomes a raw byte stream to ``port`` inside the
sandbox (HTTP Upgrade; the reply is ``101 Switching Protocols``).

On the process runtime the stream goes to ``127.0.0.1:{port}`` inside the sandbox's network
namespace, so a server bound to loopback is reached too (the service's CLI: a tunnel reaches
"loopback-only services"; preview URLs reach ``eth0`` only); nothing listening is a 502
before the upgrade. In a bashkit sandbox only a server the test registered
(``fake.ports``) listens. The bytes are spliced in the kernel (``http.streams.splice``): the fake
serves plain HTTP and runs on Linux.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.http.streams import splice
from fake_server.http.streams.relay import switch_protocols
from fake_server.models.errors import ApiError, BadGateway, BadRequest
from fake_server.models.ingress import not_listening
from fake_server.runtime.api import FeatureUnavailable

if TYPE_CHECKING:
    from aiohttp import web

    from fake_server.http.streams.relay import ClientEnd

__all__ = ["tunnel"]


async def tunnel(request: web.Request) -> web.StreamResponse:
    raw_port = request.match_info["port"]
    if not raw_port.isdigit():
        raise BadRequest("must be a port between 1 and 65535", field="port")
    port = int(raw_port)
    if not request.headers.get("Upgrade"):
        raise ApiError("expects an HTTP Upgrade", status=426, code="upgrade_required")
    sandbox = request[BACKEND_KEY].processes.tunnel_target(sandbox_id(request), port)
    try:
        sock = await sandbox.machine.connect(port, loopback=True)
    except FeatureUnavailable as exc:
        raise BadGateway(str(exc)) from None
    except OSError:
        raise not_listening(port) from None
    response, client = switch_protocols(request)
    try:
        await response.prepare(request)
        if client is not None:
            await _splice(client, sock)
    finally:
        sock.close()
        if client is not None:
            client.transport.close()
    return response


async def _splice(client: ClientEnd, sandbox: socket.socket) -> None:
    """Hand the client's socket over to ``http.streams.splice`` once the ``101`` has gone out."""
    await client.flushed()
    own = client.transport.get_extra_info("socket")
    duplicate = socket.socket(fileno=os.dup(own.fileno()))
    early = client.hand_over()  # nothing can arrive between this and the close below
    client.transport.close()
    try:
        await splice.splice_relay(duplicate, sandbox, early)
    finally:
        duplicate.close()
        client.release()
