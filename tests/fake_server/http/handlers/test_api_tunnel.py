"""``POST …/tunnel/{port}`` through a raw socket: 101, then bytes both ways to a server in the
sandbox (process runtime); 502 when nothing listens; every refusal before the upgrade."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests._fakes import api_client
from tests.fake_server._process_runtime import process_fake

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]

ECHO = (
    "import socket\n"
    "s = socket.socket()\n"
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 7000)); s.listen()\n"
    "while True:\n"
    "    c, _ = s.accept()\n"
    "    while d := c.recv(65536): c.sendall(d.upper())\n"
    "    c.close()\n"
)
#: Reads until the client's EOF, then answers: the answer needs the half-closed tunnel to stay.
UNTIL_EOF = (
    "import socket\n"
    "s = socket.socket()\n"
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 7001)); s.listen()\n"
    "while True:\n"
    "    c, _ = s.accept(); got = b''\n"
    "    while d := c.recv(65536): got += d\n"
    "    c.sendall(b'%d bytes: ' % len(got) + got[:5].upper()); c.close()\n"
)


def upgrade_request(sandbox_id: str, key: str, port: int = 7000) -> bytes:
    return (
        f"POST /v1/sandboxes/{sandbox_id}/tunnel/{port} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"X-Api-Key: {key}\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
    ).encode()


@contextlib.asynccontextmanager
async def serving(
    program: str, port: int, **fields: Any
) -> AsyncIterator[tuple[FakeCreateOS, httpx.AsyncClient, str]]:
    """A process-runtime fake, a client of it, and a sandbox (made with ``fields``) whose
    Python ``program`` listens on ``port``; the sandbox is destroyed at the end."""
    async with (
        process_fake() as fake,
        api_client(fake) as client,
    ):
        created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", **fields})
        sandbox_id = created.json()["data"]["id"]
        started = await client.post(
            f"/v1/sandboxes/{sandbox_id}/processes",
            json={"cmd": "python3", "args": ["-c", program]},
        )
        assert started.status_code == 201
        machine = fake.sandbox(sandbox_id).machine
        for _ in range(2000):  # a real program decides when it listens (bounded)
            try:
                (await machine.connect(port, loopback=True)).close()
                break
            except OSError:
                await asyncio.sleep(0.01)
        yield fake, client, sandbox_id
        assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200


async def test_a_tunnel_carries_bytes_both_ways_to_a_server_in_the_sandbox() -> None:
    async with serving(ECHO, 7000) as (fake, client, sandbox_id):
        upgrade = {"Upgrade": "tcp", "Connection": "Upgrade"}
        nothing = await client.post(f"/v1/sandboxes/{sandbox_id}/tunnel/7009", headers=upgrade)
        assert (nothing.status_code, nothing.json()["message"]) == (
            502,
            "no server is listening on port 7009 in the sandbox",
        )
        reader, writer = await asyncio.open_connection(fake.host, fake.port)
        writer.write(upgrade_request(sandbox_id, fake.api_key))
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
        assert b"\r\nUpgrade: tcp\r\n" in head
        writer.write(b"hello tunnel")
        await writer.drain()
        assert await reader.readexactly(12) == b"HELLO TUNNEL"
        payload = bytes(range(256)) * 1024
        writer.write(payload.lower())
        await writer.drain()
        assert await reader.readexactly(len(payload)) == payload.lower().upper()
        writer.write_eof()
        assert await reader.read() == b""  # the server closed after our EOF
        writer.close()


async def test_a_tunnel_reaches_a_server_bound_to_loopback_that_preview_urls_do_not() -> None:
    """The service's CLI: a tunnel reaches "loopback-only services (e.g. a dev server bound to
    127.0.0.1:3000)"; ingress goes to eth0 only."""
    loopback_echo = ECHO.replace("('0.0.0.0', 7000)", "('127.0.0.1', 7002)")
    async with serving(loopback_echo, 7002, ingress_enabled=True) as (fake, client, sandbox_id):
        preview = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/7002/")
        assert (preview.status_code, preview.json()["message"]) == (
            502,
            "no server is listening on port 7002 in the sandbox",
        )
        reader, writer = await asyncio.open_connection(fake.host, fake.port)
        writer.write(upgrade_request(sandbox_id, fake.api_key, 7002))
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
        writer.write(b"on loopback")
        await writer.drain()
        assert await reader.readexactly(11) == b"ON LOOPBACK"
        writer.write_eof()
        assert await reader.read() == b""
        writer.close()


async def test_a_half_closed_tunnel_still_carries_the_answer_then_closes() -> None:
    async with serving(UNTIL_EOF, 7001) as (fake, _client, sandbox_id):
        open_fds = len(os.listdir("/proc/self/fd"))
        loop = asyncio.get_running_loop()
        sock = socket.socket()
        sock.setblocking(False)
        await loop.sock_connect(sock, (fake.host, fake.port))
        await loop.sock_sendall(sock, upgrade_request(sandbox_id, fake.api_key, 7001) + b"hello")
        received = b""
        while b"\r\n\r\n" not in received:
            received += await loop.sock_recv(sock, 4096)
        head, _, rest = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
        await loop.sock_sendall(sock, b"hello" + b" world" * 500_000)  # beyond the relay's buffer
        sock.shutdown(socket.SHUT_WR)
        while chunk := await loop.sock_recv(sock, 65536):
            rest += chunk
        sock.close()
        assert rest == b"3000005 bytes: HELLO"  # then EOF: the tunnel closed
        for _ in range(2000):  # the fake closes its side on its loop (bounded)
            if len(os.listdir("/proc/self/fd")) <= open_fds:
                break
            await asyncio.sleep(0.005)
        assert len(os.listdir("/proc/self/fd")) <= open_fds  # sockets and pipes closed


async def test_refusals_come_before_the_upgrade(
    fake: object, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}/tunnel"
    upgrade = {"Upgrade": "tcp", "Connection": "Upgrade"}
    bashkit = await client.post(base + "/8080", headers=upgrade)
    assert (bashkit.status_code, bashkit.json()["message"]) == (
        502,
        "no server is listening on port 8080 in the sandbox",
    )
    plain = await client.post(base + "/8080")
    assert (plain.status_code, plain.json()["data"]["code"]) == (426, "upgrade_required")
    for port in ("0", "70000", "http"):
        bad = await client.post(f"{base}/{port}", headers=upgrade)
        assert bad.json() == {
            "status": "fail",
            "data": {"port": "must be a port between 1 and 65535"},
        }
    unauthorized = await client.post(base + "/8080", headers={**upgrade, "X-Api-Key": "nope"})
    assert unauthorized.status_code == 401
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    paused = await client.post(base + "/8080", headers=upgrade)
    assert (paused.status_code, paused.json()["data"]["code"]) == (409, "not_running")
    unknown = await client.post("/v1/sandboxes/sb-nope/tunnel/8080", headers=upgrade)
    assert unknown.status_code == 404
    assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200
