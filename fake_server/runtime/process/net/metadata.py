"""The metadata endpoint a sandbox reaches at ``http://169.254.169.254/``, whatever its rules.

The service answers HTTP 200 there under any egress rules (measured; its body is not
documented). The fake serves, from a socket made in the router's namespace (HTTP/1.1 through
h11, one request per connection):

- ``GET /``: ``{"sandbox_id": …, "ip": …}`` of the sandbox asking (known by its address);
- any other path or method: 404; a request from an address that is no sandbox's: 404.

Bounded as the DNS relay is (``caps``): ``EACH`` connections per sandbox, ``TOTAL`` for all
of them: a connection past a sandbox's bound is closed as soon as it is accepted, and none is
accepted while all sandboxes hold theirs (``caps.BoundedServer``).
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import TYPE_CHECKING

import h11

from fake_server.runtime.process.containment.caps import BoundedServer, Caps

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.runtime.process.net.netns import NetNamespace

__all__ = ["Metadata"]

PORT = 80
#: Real seconds a client has to send its request.
REQUEST_TIMEOUT = 10.0
#: Connections served at once: per sandbox, and for all sandboxes together.
EACH, TOTAL = 8, 64
#: Connections the kernel queues while the endpoint accepts none.
_BACKLOG = 64


class Metadata:
    """The endpoint of one router; ``describe(ip)`` names the sandbox with that address."""

    def __init__(
        self, net: NetNamespace, address: str, describe: Callable[[str], dict[str, str] | None]
    ) -> None:
        self._net = net
        self._address = address
        self._describe = describe
        self._server: BoundedServer | None = None
        #: Connections being served, by sandbox address.
        self.caps: Caps[str | None] = Caps(EACH, TOTAL)

    async def serve(self) -> None:
        sock = self._net.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._address, PORT))
            sock.listen(_BACKLOG)
        except OSError:
            sock.close()
            raise
        self._server = BoundedServer(sock, self.caps, self._serve)

    def answer(self, client: str, method: bytes, target: bytes) -> tuple[int, bytes]:
        """The status and JSON body for one request from ``client``."""
        found = self._describe(client) if (method, target) == (b"GET", b"/") else None
        if found is None:
            return 404, b'{"error": "not found"}\n'
        return 200, json.dumps(found).encode() + b"\n"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client = str(peer[0]) if peer else ""
        connection = h11.Connection(h11.SERVER)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                event = connection.next_event()
                while event is h11.NEED_DATA:
                    connection.receive_data(await reader.read(4096))
                    event = connection.next_event()
            if not isinstance(event, h11.Request):
                return
            status, body = self.answer(client, event.method, event.target)
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            headers.append(("Connection", "close"))
            reason = b"OK" if status == 200 else b"Not Found"
            response = h11.Response(status_code=status, headers=headers, reason=reason)
            writer.write(connection.send(response) or b"")
            writer.write(connection.send(h11.Data(data=body)) or b"")
            writer.write(connection.send(h11.EndOfMessage()) or b"")
            await writer.drain()
        except (OSError, TimeoutError, h11.ProtocolError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        """Stop listening and drop every open connection; idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
