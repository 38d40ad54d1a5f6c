"""An interactive shell over an HTTP Upgrade (``POST …/shell``), as the official CLI's
``createos sandbox shell`` speaks it: after ``101 Switching Protocols`` the client sends frames
(a type byte, a 4-byte big-endian length, the payload; type 0 keystrokes, type 1 a resize as
rows and cols) and reads the terminal's bytes as they come; the connection closes when the
shell exits."""

import asyncio
import struct

import httpx
import pytest


def frame(kind, payload):
    return bytes([kind]) + struct.pack("!I", len(payload)) + payload


@pytest.mark.asyncio
async def test_shell_over_an_http_upgrade(createos_fake):
    fake = createos_fake
    async with httpx.AsyncClient(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as api:
        created = await api.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = created.json()["data"]["id"]

        reader, writer = await asyncio.open_connection(fake.host, fake.port)
        writer.write(
            f"POST /v1/sandboxes/{sandbox_id}/shell HTTP/1.1\r\nHost: {fake.host}\r\n"
            f"X-Api-Key: {fake.api_key}\r\nConnection: Upgrade\r\nUpgrade: tcp-tunnel\r\n"
            "Content-Length: 0\r\n\r\n".encode()
        )
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
        writer.write(frame(1, struct.pack("!HH", 40, 120)))  # resize: 40 rows, 120 cols
        writer.write(frame(0, b"echo hello from the shell; stty size\n"))
        assert await reader.readuntil(b"40 120\n") == b"hello from the shell\n40 120\n"
        writer.write(frame(0, b"exit 7\n"))
        assert await reader.read() == b""  # the shell exited: the connection closes
        writer.close()
        [shell] = (await api.get(f"/v1/sandboxes/{sandbox_id}/processes")).json()["data"][
            "processes"
        ]
        assert shell["exit_code"] == 7
        await api.delete(f"/v1/sandboxes/{sandbox_id}")
