"""The in-guest agent of a process-runtime sandbox: ``127.0.0.1:1029`` inside its network.

On the service a workload pauses or deletes its own sandbox by ``POST``-ing to the VM's agent
on loopback (TS ``src/self.ts``, Python ``createos/self.py``, TS example 52):
``/self/pause`` and ``/self/delete``, with an optional ``reason`` (at most 128 characters),
answered 202. The fake listens there with a socket it makes inside the sandbox's network
namespace (as preview URLs connect to the sandbox with sockets made there), so the port is
reachable from the sandbox's processes only; nothing listens on the host's loopback. The
reply is sent before the sandbox is paused or destroyed, so the caller gets its 202.

At most ``CONNECTIONS`` connections are served at once (each holds a descriptor of the fake's
process for up to ``_READ_TIMEOUT``); more wait in the listen backlog, unaccepted
(``caps.BoundedServer``), so a sandbox flooding its agent cannot take the fake's descriptors
(1,500 connections once gave thousands of ``EMFILE`` errors and API timeouts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import h11

from fake_server.runtime.process.containment.caps import BoundedServer, Caps

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.runtime.process.net.netns import NetNamespace
    from fake_server.runtime.process.sandbox.selfpipe import SelfPipe

__all__ = ["ACTIONS", "CONNECTIONS", "PORT", "REASON_LIMIT", "Agent"]

PORT = 1029
#: What ``/self/<action>`` may name.
ACTIONS = ("pause", "delete")
#: The longest reason the service records (longer ones are cut).
REASON_LIMIT = 128
#: Real seconds a connection may take to send its request.
_READ_TIMEOUT = 10.0
#: Connections served at once (and the listen backlog, where more wait).
CONNECTIONS = 16


class Agent:
    """The listener of one sandbox; ``start`` once its namespace exists, ``close`` at destroy.

    ``handler(action, reason)`` carries out a signal, after the reply went; ``pipe`` is the
    agent's ``/run/self`` (``selfpipe``), opened and closed with the listener."""

    def __init__(
        self,
        net: NetNamespace,
        handler: Callable[[str, str], None],
        pipe: SelfPipe | None = None,
    ) -> None:
        self._net = net
        self._handler = handler
        self._pipe = pipe
        self._server: BoundedServer | None = None
        self._starting: asyncio.Task[None] | None = None
        #: Connections being served now (bounded by ``CONNECTIONS``).
        self.caps: Caps[str | None] = Caps(CONNECTIONS, CONNECTIONS)

    async def start(self) -> None:
        """Listen (once; later calls wait for the first)."""
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._listen())
            if self._pipe is not None:
                self._pipe.open()
        await asyncio.shield(self._starting)

    async def _listen(self) -> None:
        sock = self._net.socket()
        try:
            sock.bind(("127.0.0.1", PORT))
            sock.listen(CONNECTIONS)
            self._server = BoundedServer(sock, self.caps, self._serve, by_peer=False)
        except BaseException:
            sock.close()
            raise

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One request per connection (HTTP/1.1 through h11), then close."""
        connection = h11.Connection(h11.SERVER)
        try:
            async with asyncio.timeout(_READ_TIMEOUT):
                request = await _request(connection, reader)
            if request is None:
                return
            status, body, action = _route(request)
            writer.write(_reply(connection, status, body))
            await writer.drain()
            if action is not None:
                asyncio.get_running_loop().call_soon(self._handler, *action)
        except (OSError, TimeoutError, h11.ProtocolError):
            return  # a client that went away or spoke no HTTP: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def close(self) -> None:
        """Stop listening; idempotent."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        if self._pipe is not None:
            self._pipe.close()
        server, self._server = self._server, None
        if server is not None:
            server.close()


async def _request(connection: h11.Connection, reader: asyncio.StreamReader) -> h11.Request | None:
    request = None
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(await reader.read(4096))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.EndOfMessage):
            return request
        elif isinstance(event, h11.ConnectionClosed):
            return None


def _route(request: h11.Request) -> tuple[int, dict[str, str], tuple[str, str] | None]:
    """The status, JSON body and the signal to carry out (``None``: nothing)."""
    url = urlsplit(request.target.decode("latin-1"))
    parts = url.path.strip("/").split("/")
    if len(parts) != 2 or parts[0] != "self" or parts[1] not in ACTIONS:
        return 404, {"error": "not found"}, None
    if request.method != b"POST":
        return 405, {"error": "method not allowed"}, None
    reason = parse_qs(url.query).get("reason", [""])[0][:REASON_LIMIT]
    return 202, {"status": "accepted", "action": parts[1]}, (parts[1], reason)


def _reply(connection: h11.Connection, status: int, body: dict[str, str]) -> bytes:
    data = json.dumps(body).encode()
    headers = [
        ("content-type", "application/json"),
        ("content-length", str(len(data))),
        ("connection", "close"),
    ]
    return b"".join(
        connection.send(event) or b""
        for event in (
            h11.Response(status_code=status, headers=headers),
            h11.Data(data=data),
            h11.EndOfMessage(),
        )
    )
