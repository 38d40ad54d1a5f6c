"""WebSockets through preview URLs: aiohttp's WebSocket client against a stdlib WebSocket
server started inside a process-runtime sandbox by exec, daemonised as the service's docs
start servers; refusals come before the upgrade, as for any preview request."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import TYPE_CHECKING

import aiohttp
import pytest

from tests._fakes import api_client
from tests.fake_server._process_runtime import process_fake

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import httpx

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio

#: A WebSocket server in the standard library only: the handshake (400 without a key), then
#: text frames echoed upper-cased, binary frames echoed, ``bye`` answered by a server close.
WS_SERVER = r"""
import base64, hashlib, socket, struct, threading
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

def frame(op, data):
    n = len(data)
    size = bytes([n]) if n < 126 else (
        b"\x7e" + struct.pack("!H", n) if n < 65536 else b"\x7f" + struct.pack("!Q", n))
    return bytes([0x80 | op]) + size + data

def serve(c):
    f = c.makefile("rb")
    head = []
    while (line := f.readline()) not in (b"\r\n", b""):
        head.append(line)
    keys = [h.split(b":", 1)[1].strip() for h in head
            if h.lower().startswith(b"sec-websocket-key:")]
    if not keys:
        c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 6\r\n"
                  b"Connection: close\r\n\r\nno key")
        c.close()
        return
    accept = base64.b64encode(hashlib.sha1(keys[0] + GUID).digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    while len(h := f.read(2)) == 2:
        op, n = h[0] & 15, h[1] & 127
        if n == 126:
            n = struct.unpack("!H", f.read(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", f.read(8))[0]
        mask = f.read(4) * (n // 4 + 1)
        data = bytes(a ^ b for a, b in zip(f.read(n), mask))
        if op == 8 or data == b"bye":
            c.sendall(frame(8, struct.pack("!H", 1000)))
            break
        c.sendall(frame(op, data.upper() if op == 1 else data))
    c.close()

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8765))
s.listen()
while True:
    conn, _ = s.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


async def _sandbox_with_server(fake: FakeCreateOS, client: httpx.AsyncClient) -> str:
    created = await client.post(
        "/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "ingress_enabled": True}
    )
    sandbox_id: str = created.json()["data"]["id"]
    script = base64.b64encode(WS_SERVER.encode()).decode()
    started = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec",
        json={
            "cmd": "sh",
            "args": [
                "-c",
                f"echo {script} | base64 -d > /tmp/ws.py && "
                "nohup setsid python3 /tmp/ws.py >/tmp/ws.log 2>&1 &",
            ],
        },
    )
    assert started.json()["data"]["result"]["exit_code"] == 0
    for _ in range(2000):  # a real program decides when it listens (bounded)
        try:
            (await fake.sandbox(sandbox_id).machine.connect(8765)).close()
            break
        except OSError:
            await asyncio.sleep(0.01)
    return sandbox_id


@contextlib.asynccontextmanager
async def _fake() -> AsyncIterator[tuple[FakeCreateOS, httpx.AsyncClient]]:
    async with process_fake() as fake:
        async with api_client(fake) as client:
            yield fake, client


async def test_a_websocket_through_a_preview_url_relays_frames_both_ways() -> None:
    async with _fake() as (fake, client):
        sandbox_id = await _sandbox_with_server(fake, client)
        url = f"{fake.preview_origin}/_ingress/{sandbox_id}/8765/socket"
        async with aiohttp.ClientSession() as session:
            # Preview URLs are public: a wrong account key changes nothing, as on plain ingress.
            async with session.ws_connect(url, headers={"X-Api-Key": "not-a-key"}) as ws:
                await ws.send_str("hello preview")
                assert await ws.receive_str() == "HELLO PREVIEW"
                payload = bytes(range(256)) * 400
                await ws.send_bytes(payload)
                assert await ws.receive_bytes() == payload
                await ws.close()
            assert ws.close_code == 1000
            async with session.ws_connect(url) as ws:  # the server closes this time
                await ws.send_str("bye")
                message = await ws.receive()
                assert message.type == aiohttp.WSMsgType.CLOSE
                assert message.data == 1000
        assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200


async def test_refusals_of_a_websocket_preview_come_before_the_upgrade() -> None:
    async with _fake() as (fake, client):
        sandbox_id = await _sandbox_with_server(fake, client)
        upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13"}
        # The handshake is the server's: without a key it answers 400, passed through.
        no_key = await client.get(
            f"{fake.preview_origin}/_ingress/{sandbox_id}/8765/", headers=upgrade
        )
        assert (no_key.status_code, no_key.text) == (400, "no key")
        empty = await client.get(
            f"{fake.preview_origin}/_ingress/{sandbox_id}/8766/", headers=upgrade
        )
        assert (empty.status_code, empty.json()["message"]) == (
            502,
            "no server is listening on port 8766 in the sandbox",
        )
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(f"{fake.preview_origin}/_ingress/{sandbox_id}/8766/")
            assert refused.value.status == 502
            assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
            paused = await client.get(
                f"{fake.preview_origin}/_ingress/{sandbox_id}/8765/", headers=upgrade
            )
            assert (paused.status_code, paused.json()["message"]) == (
                502,
                "sandbox is paused; its preview URLs answer once it runs",
            )
            assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200
            gone = await client.get(
                f"{fake.preview_origin}/_ingress/{sandbox_id}/8765/", headers=upgrade
            )
            plain = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/8765/")
            assert (gone.status_code, gone.json()) == (plain.status_code, plain.json())
            assert gone.json()["message"] == (
                "sandbox is destroyed; its preview URLs answer once it runs"
            )
            unknown = await client.get(
                f"{fake.preview_origin}/_ingress/sb-unknown/8765/", headers=upgrade
            )
            assert (unknown.status_code, unknown.json()["data"]) == (
                404,
                {
                    "code": "ingress_not_found",
                    "message": "no sandbox with ingress enabled at this address",
                },
            )
            with pytest.raises(aiohttp.WSServerHandshakeError) as missing:
                await session.ws_connect(f"{fake.preview_origin}/_ingress/sb-unknown/8765/")
            assert missing.value.status == 404
