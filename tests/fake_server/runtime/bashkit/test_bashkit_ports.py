"""Servers a test registers in bashkit sandboxes (``fake.ports``): preview URLs and tunnels
reach them, a reset removes them, a failing handler is an error of the fake, bad
registrations are refused with a clear message."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


async def hello_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A one-reply HTTP server: the path it was asked for, back."""
    head = await reader.readuntil(b"\r\n\r\n")
    path = head.split(b" ", 2)[1]
    body = b"served " + path
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()


async def until_eof(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Reads until the client's EOF, then answers (the tunnel must stay half open)."""
    got = await reader.read()
    writer.write(b"%d bytes: %s" % (len(got), got.upper()))
    await writer.drain()


async def open_tunnel(
    fake: FakeCreateOS, sandbox_id: str, port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """``POST …/tunnel/{port}`` upgraded (101): the raw stream to the port in the sandbox."""
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    writer.write(
        f"POST /v1/sandboxes/{sandbox_id}/tunnel/{port} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"X-Api-Key: {fake.api_key}\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
    return reader, writer


async def test_a_preview_url_reaches_a_registered_server(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox(ingress_enabled=True)
    nothing = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/app")
    assert (nothing.status_code, nothing.json()["message"]) == (
        502,
        "no server is listening on port 8080 in the sandbox",
    )
    fake.ports.register(8080, hello_http)
    assert fake.ports.ports() == [8080]
    served = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/app")
    assert (served.status_code, served.text) == (200, "served /app")


async def test_a_tunnel_reaches_a_registered_server_and_keeps_a_half_close(
    fake: FakeCreateOS, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    fake.ports.register(5432, until_eof)
    reader, writer = await open_tunnel(fake, sandbox_id, 5432)
    writer.write(b"select 1")
    writer.write_eof()
    assert await reader.read() == b"8 bytes: SELECT 1"  # then EOF: the tunnel closed
    writer.close()


async def test_a_reset_removes_the_servers_and_ends_their_connections(
    fake: FakeCreateOS, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    fake.ports.register(5432, until_eof)
    reader, writer = await open_tunnel(fake, sandbox_id, 5432)
    fake.reset()
    assert fake.ports.ports() == []
    assert await reader.read() == b""  # the handler was cancelled: the tunnel closed
    writer.close()
    async with httpx.AsyncClient(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as client:
        created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        fresh = created.json()["data"]["id"]
        gone = await client.post(
            f"/v1/sandboxes/{fresh}/tunnel/5432",
            headers={"Upgrade": "tcp", "Connection": "Upgrade"},
        )
    assert (gone.status_code, gone.json()["message"]) == (
        502,
        "no server is listening on port 5432 in the sandbox",
    )


async def test_a_failing_handler_is_an_error_of_the_fake_and_closes_the_connection(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    async def broken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        raise RuntimeError("the test's server broke")

    sandbox_id = await make_sandbox(ingress_enabled=True)
    fake.ports.register(8080, broken)
    answer = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/")
    assert answer.status_code == 502
    [(operation, trace)] = fake.errors
    assert operation == "port"
    assert trace.rstrip().endswith("RuntimeError: the test's server broke")
    fake.errors.clear()  # seen: the fixture checks that no other error happened


NOT_ASYNC = "a port handler is an async function (reader, writer)"


@pytest.mark.parametrize(
    ("port", "handler", "error", "message"),
    [
        (0, hello_http, ValueError, "a port is an integer between 1 and 65535"),
        (65536, hello_http, ValueError, "a port is an integer between 1 and 65535"),
        (True, hello_http, ValueError, "a port is an integer between 1 and 65535"),
        ("8080", hello_http, ValueError, "a port is an integer between 1 and 65535"),
        (
            8080,
            lambda r, w: None,
            TypeError,
            "a port handler is an async function (reader, writer)",
        ),
    ],
)
async def test_bad_registrations_are_refused(
    fake: FakeCreateOS, port: Any, handler: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        fake.ports.register(port, handler)
    assert str(caught.value) == message
    assert fake.ports.ports() == []
