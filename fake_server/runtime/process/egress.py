"""Egress of a process-runtime sandbox: nothing, or an HTTP proxy that honours its rules.

A sandbox's network namespace has only a loopback, so no packet leaves it. When the sandbox
has egress rules, the fake listens on ``127.0.0.1:3128`` *inside* that namespace (a socket
made there, served by the fake's loop) and its processes get ``http_proxy``/``https_proxy``
pointing at it (``no_proxy`` keeps the sandbox's own loopback direct). The proxy takes
``CONNECT host:port`` (HTTPS and any TCP) and absolute-form HTTP requests, and opens the
connection from the host only when a rule allows the destination:

- ``host`` or ``host:port``: that name, as the program asked for it (case-insensitive);
- ``*.domain`` (``:port``): any name below ``domain``;
- ``a.b.c.d/n`` (``:port``): an IP address inside the network, as the program wrote it;
- ``*``: any destination.

A denied destination gets ``403`` with the reason, an unreachable one ``502``. Loopback
names and addresses are never proxied: inside the sandbox they mean its own loopback.
Programs that ignore the proxy variables (raw sockets, ``ping``) reach nothing. Bytes out
count as the sandbox's egress, bytes back as its ingress.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.runtime import egress as egress_rules

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from fake_server.runtime.api import Meter
    from fake_server.runtime.process.netns import NetNamespace

__all__ = ["PROXY_PORT", "EgressProxy", "allows", "proxy_env", "resolve"]

#: Where the proxy listens inside the sandbox (the usual proxy port).
PROXY_PORT = 3128
#: Real seconds to reach an allowed destination, and to receive a request's head.
CONNECT_TIMEOUT = 10.0
_CHUNK = 64 * 1024
#: Headers of an absolute-form request that are for the proxy, not for the destination.
_DROPPED = (b"proxy-", b"connection:", b"keep-alive:")
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def proxy_env() -> dict[str, str]:
    """The variables that send a program's HTTP(S) through the sandbox's proxy."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    direct = "localhost,127.0.0.1,::1"
    return {"http_proxy": url, "https_proxy": url, "HTTP_PROXY": url, "HTTPS_PROXY": url,
            "no_proxy": direct, "NO_PROXY": direct}  # fmt: skip


def allows(rules: Sequence[str], host: str, port: int) -> bool:
    """Whether a rule lets the sandbox reach ``host:port``: never a loopback destination (it
    means the sandbox's own), nothing without a rule; the rules match as on every runtime."""
    host = host.strip("[]").rstrip(".").lower()
    if not rules or host in _LOOPBACK_NAMES or egress_rules.is_loopback(host):
        return False
    return egress_rules.allows(rules, host, port)


def _has_port(rule: str) -> bool:
    return ":" in rule and rule.rsplit(":", 1)[1].isdigit()


async def resolve(host: str, port: int) -> list[tuple[str, int]]:
    """The addresses a destination resolves to on the host, loopback ones left out (the
    host's own services are never reachable through a rule that names something else)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found = [(str(info[4][0]), port) for info in infos]
    return [a for a in found if not ipaddress.ip_address(a[0].split("%")[0]).is_loopback]


@dataclass(slots=True)
class _Target:
    host: str
    port: int
    head: bytes  # what to send upstream first (empty for CONNECT)


class EgressProxy:
    """The proxy of one sandbox; started on first need, closed with the sandbox."""

    def __init__(self, net: NetNamespace) -> None:
        self._net = net
        self.rules: list[str] = []
        self.meter: Callable[[], Meter] | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        if self._server is not None:
            return
        sock = self._net.socket()
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", PROXY_PORT))
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        self._server = await asyncio.start_server(self._serve, sock=sock)

    def close(self) -> None:
        """Stop listening and cut every proxied connection; idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(CONNECT_TIMEOUT):
            head = await reader.readuntil(b"\r\n\r\n")
        target = _parse(head)
        if target is None:
            return await _answer(writer, 400, "send CONNECT host:port or an absolute http:// URL")
        if not allows(self.rules, target.host, target.port):
            return await _answer(
                writer,
                403,
                f"egress to {target.host}:{target.port} is not allowed by the sandbox's "
                "egress rules",
            )
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                addresses = await resolve(target.host, target.port)
                if not addresses:
                    return await _answer(writer, 502, f"{target.host} has no reachable address")
                up_reader, up_writer = await asyncio.open_connection(*addresses[0])
        except (OSError, TimeoutError):
            return await _answer(writer, 502, f"cannot reach {target.host}:{target.port}")
        try:
            if target.head:
                up_writer.write(target.head)
                self._count(sent=len(target.head))
            else:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(
                self._pipe(reader, up_writer, out=True), self._pipe(up_reader, writer, out=False)
            )
        finally:
            up_writer.close()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, out: bool
    ) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(_CHUNK):
                writer.write(data)
                await writer.drain()
                self._count(sent=len(data)) if out else self._count(received=len(data))
            if writer.can_write_eof():
                writer.write_eof()

    def _count(self, *, sent: int = 0, received: int = 0) -> None:
        if self.meter is not None:
            meter = self.meter()
            meter.sent(sent)
            meter.received(received)


def _parse(head: bytes) -> _Target | None:
    """The destination of a proxy request, and the head to send on for absolute-form HTTP."""
    line, _, rest = head.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) != 3:
        return None
    method, target, version = (p.decode("latin-1") for p in parts)
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return _Target(host, int(port), b"") if port.isdigit() and host else None
    if not target.lower().startswith("http://"):
        return None
    authority, _, path = target[7:].partition("/")
    host, _, port = authority.rpartition(":") if _has_port(authority) else (authority, "", "80")
    if not host or "@" in host:
        return None
    headers = [h for h in rest.split(b"\r\n") if h and not h.lower().startswith(b"proxy-")]
    headers = [h for h in headers if not h.lower().startswith(b"connection:")]
    start = f"{method} /{path} {version}\r\n".encode("latin-1")
    return _Target(
        host, int(port), start + b"\r\n".join([*headers, b"Connection: close"]) + b"\r\n\r\n"
    )


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    body = f"{reason}\n".encode()
    phrase = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    writer.write(
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()
