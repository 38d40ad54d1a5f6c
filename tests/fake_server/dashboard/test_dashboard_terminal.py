"""The dashboard's terminal (``/_fake/ui/api/sandboxes/{id}/shell``): only with the session
cookie and from the dashboard's own origin, errors before the upgrade, and keystrokes relayed
to the sandbox's shell and its echo back, with aiohttp's WebSocket client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import aiohttp
import httpx
import pytest
import pytest_asyncio

from tests.fake_server.http.handlers.test_api_shell import read_until

if TYPE_CHECKING:
    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]
UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


@pytest_asyncio.fixture(name="cookie")
async def _cookie(fake: FakeCreateOS) -> str:
    """The ``Cookie`` header of a logged-in dashboard."""
    async with httpx.AsyncClient(base_url=fake.url) as ui:
        answer = await ui.post("/_fake/ui/login", json={"key": fake.control_key})
        assert answer.status_code == 200
        return f"createos_ui={answer.cookies['createos_ui']}"


@pytest_asyncio.fixture(name="session")
async def _session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def _url(fake: FakeCreateOS, sandbox_id: str) -> str:
    return f"{fake.url}/_fake/ui/api/sandboxes/{sandbox_id}/shell"


async def test_keystrokes_reach_the_shell_and_its_output_comes_back(
    fake: FakeCreateOS, make_sandbox: MakeSandbox, cookie: str, session: aiohttp.ClientSession
) -> None:
    sandbox_id = await make_sandbox()
    headers = {"Cookie": cookie, "Origin": fake.url}
    async with session.ws_connect(
        _url(fake, sandbox_id) + "?rows=10&cols=40", headers=headers
    ) as ws:
        await ws.send_bytes(b"echo hi; stty size\r")  # Enter, as a terminal sends it
        assert await read_until(ws, b"10 40\n") == b"hi\n10 40\n"
        await ws.send_str(json.dumps({"type": "resize", "rows": 30, "cols": 100}))
        await ws.send_str("stty size\n")
        assert await read_until(ws, b"30 100\n") == b"30 100\n"
        await ws.send_bytes(b"exit 4\n")
        assert json.loads((await ws.receive()).data) == {"type": "exit", "exit_code": 4}
        assert (await ws.receive()).type == aiohttp.WSMsgType.CLOSE
    assert (ws.close_code, fake.errors) == (1000, [])
    [shell] = fake.sandbox(sandbox_id).processes.values()
    assert (shell.spec.cmd, shell.exit_code) == ("/bin/bash", 4)
    assert [e for e in fake.journal.events if "/_fake/ui" in (e.path or "")] == []


async def test_no_cookie_or_another_origin_is_refused_before_a_shell_opens(
    fake: FakeCreateOS, make_sandbox: MakeSandbox, cookie: str, client: httpx.AsyncClient
) -> None:
    sandbox_id = await make_sandbox()
    url = _url(fake, sandbox_id)
    async with httpx.AsyncClient() as raw:

        async def answer(headers: dict[str, str], path: str = url) -> tuple[int, object]:
            response = await raw.get(path, headers={**UPGRADE, **headers})
            return response.status_code, response.json()

        assert await answer({"Origin": fake.url}) == (
            401,
            {"error": "log in with the fake's control key"},
        )
        assert await answer({"Origin": fake.url, "X-Api-Key": fake.api_key}) == (
            401,
            {"error": "log in with the fake's control key"},
        )
        foreign = {"error": "refused: the terminal opens only from the dashboard's own pages"}
        assert await answer({"Cookie": cookie, "Origin": "https://evil.example"}) == (
            403,
            foreign,
        )
        assert await answer({"Cookie": cookie}) == (403, foreign)
        good = {"Cookie": cookie, "Origin": fake.url}
        no_upgrade = await raw.get(url, headers=good)
        assert (no_upgrade.status_code, no_upgrade.json()) == (
            426,
            {"error": "the terminal expects a WebSocket upgrade"},
        )
        assert await answer(good, url + "?rows=0") == (
            400,
            {"error": "rows: must be between 1 and 1000"},
        )
        assert await answer(good, _url(fake, "sb-none")) == (
            404,
            {"error": "no sandbox has this id"},
        )
        assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    # A browser shows no HTTP answer to a socket: the fake upgrades, then closes saying why.
    async with aiohttp.ClientSession(headers={"Cookie": cookie, "Origin": fake.url}) as session:
        async with session.ws_connect(url) as ws:
            closed = await ws.receive()
    assert (closed.type, ws.close_code, closed.extra) == (
        aiohttp.WSMsgType.CLOSE,
        4409,
        "sandbox is paused, not running",
    )
    assert fake.sandbox(sandbox_id).processes == {}
    assert fake.errors == []
