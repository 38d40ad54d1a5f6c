"""A port forward into a sandbox (``POST …/tunnel/{port}``): after ``101 Switching Protocols``
the connection is a raw byte stream to a server listening inside the sandbox."""

import asyncio

import httpx
import pytest

SERVER = (
    "import socket\n"
    "s = socket.socket(); s.bind(('0.0.0.0', 7000)); s.listen()\n"
    "while True:\n"
    "    c, _ = s.accept()\n"
    "    c.sendall(c.recv(1024)[::-1]); c.close()\n"
)


@pytest.mark.createos(runtime="process")
@pytest.mark.asyncio
async def test_tunnel_to_a_server_in_the_sandbox(createos_fake):
    fake = createos_fake
    async with httpx.AsyncClient(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as api:
        created = await api.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = created.json()["data"]["id"]
        await api.post(
            f"/v1/sandboxes/{sandbox_id}/processes",
            json={"cmd": "python3", "args": ["-c", SERVER]},
        )
        # Until the server listens, the tunnel answers 502 (before any upgrade).
        probe = f"/v1/sandboxes/{sandbox_id}/tunnel/7000"
        upgrade = {"Connection": "Upgrade", "Upgrade": "tcp"}
        for _ in range(2000):
            if (await api.post(probe, headers=upgrade)).status_code != 502:
                break
            await asyncio.sleep(0.01)

        reader, writer = await asyncio.open_connection(fake.host, fake.port)
        writer.write(
            f"POST {probe} HTTP/1.1\r\nHost: {fake.host}\r\nX-Api-Key: {fake.api_key}\r\n"
            "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n".encode()
        )
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
        writer.write(b"stressed")
        assert await reader.readexactly(8) == b"desserts"
        writer.close()
        await api.delete(f"/v1/sandboxes/{sandbox_id}")
