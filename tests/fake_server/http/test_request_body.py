"""JSON bodies are read whole, however they are split into TCP segments (up to 8 MiB)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, tls_context

pytestmark = pytest.mark.asyncio


async def _sandbox(fake: FakeCreateOS) -> str:
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
    ) as c:
        created = await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        return str(created.json()["data"]["id"])


async def test_a_body_sent_in_two_writes_is_read_whole() -> None:
    async with FakeCreateOS(transitions=TransitionPolicy.immediate()) as fake:
        sandbox_id = await _sandbox(fake)
        body = json.dumps({"cmd": "wc", "args": ["-c"], "stdin": "x" * 20_000}).encode()
        head = (
            f"POST /v1/sandboxes/{sandbox_id}/exec HTTP/1.1\r\nHost: fake\r\n"
            f"X-Api-Key: {fake.api_key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        reader, writer = await asyncio.open_connection(fake.host, fake.port)
        try:
            writer.write(head + body[:10_000])
            await writer.drain()
            # Hold the rest back while the fake reads: the request is journaled (with its
            # body) only once the body is whole.
            for _ in range(50):
                await asyncio.sleep(0)
            assert fake.journal.operations()[-1] == "create_sandbox"
            writer.write(body[10_000:])
            await writer.drain()
            reply = await reader.read()
        finally:
            writer.close()
            await writer.wait_closed()
    status_line, _, rest = reply.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 200 OK", reply[:300]
    answer = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert answer["data"]["result"]["stdout"].strip() == "20000"
    assert fake.errors == []


@pytest.mark.parametrize("size", [3 * 1024 * 1024, 8 * 1024 * 1024 - 64])
async def test_exec_takes_megabytes_of_stdin_up_to_the_documented_limit(size: int) -> None:
    async with FakeCreateOS(transitions=TransitionPolicy.immediate()) as fake:
        sandbox_id = await _sandbox(fake)
        prefix = json.dumps({"cmd": "wc", "args": ["-c"], "stdin": ""})[:-2]  # ends in "
        body = prefix.encode() + b"y" * (size - len(prefix) - 2) + b'"}'
        assert len(body) == size
        async with httpx.AsyncClient(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=60
        ) as c:
            answer = await c.post(
                f"/v1/sandboxes/{sandbox_id}/exec",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            too_big = await c.post(
                f"/v1/sandboxes/{sandbox_id}/exec",
                content=b" " * (8 * 1024 * 1024 + 1),
                headers={"Content-Type": "application/json"},
            )
    assert answer.status_code == 200, answer.text[:300]
    assert int(answer.json()["data"]["result"]["stdout"]) == size - len(prefix) - 2
    assert (too_big.status_code, too_big.json()["data"]) == (400, {"body": "is too large"})
    assert fake.errors == []
