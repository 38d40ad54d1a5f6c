"""``GET …/shell-ws``: a login shell on a PTY over a WebSocket (aiohttp's client), on both
runtimes; errors before the upgrade; idle timeout, flood bound and a vanished client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import aiohttp
import httpx
import pytest
import pytest_asyncio

from fake_server import TransitionPolicy, VirtualClock
from fake_server.http.handlers.shells import IDLE_SECONDS, MAX_FRAME

if TYPE_CHECKING:
    from fake_server import FakeCreateOS
    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


@pytest_asyncio.fixture(name="session")
async def _session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def shell_url(fake: FakeCreateOS, sandbox_id: str) -> str:
    return f"{fake.url}/v1/sandboxes/{sandbox_id}/shell-ws"


async def read_until(ws: aiohttp.ClientWebSocketResponse, marker: bytes) -> bytes:
    """What the shell printed up to ``marker``; a shell that never prints it fails the test
    (bounded in real time: a real program decides) instead of hanging the suite."""
    seen = b""
    while marker not in seen:
        message = await ws.receive(timeout=30)
        assert message.type == aiohttp.WSMsgType.BINARY, message
        seen += message.data
    return seen


async def ended(client: httpx.AsyncClient, sandbox_id: str) -> list[str]:
    """Each shell's state once it has ended (the handler kills it after the socket closed)."""
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    states = []
    for process in (await client.get(base)).json()["data"]["processes"]:
        waited = await client.get(f"{base}/{process['process_id']}/wait")
        states.append(waited.json()["data"]["state"])
    return states


async def test_bashkit_shell_keystrokes_output_resize_and_exit_status(
    fake: FakeCreateOS, make_sandbox: MakeSandbox, session: aiohttp.ClientSession
) -> None:
    sandbox_id = await make_sandbox()
    headers = {"X-Api-Key": fake.api_key}
    async with session.ws_connect(
        shell_url(fake, sandbox_id) + "?rows=10&cols=40", headers=headers
    ) as ws:
        await ws.send_bytes(b"cd /tmp; echo $((6 * 7)); stty size\n")
        assert await read_until(ws, b"10 40\n") == b"42\n10 40\n"
        await ws.send_str(json.dumps({"type": "resize", "rows": 30, "cols": 100}))
        await ws.send_str("pwd; stty size\n")  # text that is not a control message is typed
        assert await read_until(ws, b"30 100\n") == b"/tmp\n30 100\n"
        await ws.send_bytes(b"exit 3\n")
        exit_frame = await ws.receive()
        assert json.loads(exit_frame.data) == {"type": "exit", "exit_code": 3}
        assert (await ws.receive()).type == aiohttp.WSMsgType.CLOSE
    assert (ws.close_code, fake.errors) == (1000, [])
    [shell] = fake.sandbox(sandbox_id).processes.values()
    assert (shell.spec.cmd, shell.spec.args, shell.exit_code) == ("/bin/bash", ("-l",), 3)


async def test_process_runtime_shell_is_a_real_login_shell(
    make_fake: MakeFake,
    session: aiohttp.ClientSession,
) -> None:
    fake = await make_fake(
        clock=VirtualClock(), transitions=TransitionPolicy.immediate(), runtime="process"
    )
    async with httpx.AsyncClient(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as c:
        created = await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = created.json()["data"]["id"]
        headers = {"X-Api-Key": fake.api_key}
        async with session.ws_connect(shell_url(fake, sandbox_id), headers=headers) as ws:
            await ws.send_bytes(b"PS1='ready''> '; shopt -q login_shell && echo LOGIN-$((6*7))\n")
            # the shell waits for a line before it is resized: a resize landing while it
            # still runs the previous one could be read before stty asks (24 80, a hang)
            # (the prompt, not its echo; TERM is xterm-256color: readline may put a
            # bracketed-paste switch before it)
            assert b"LOGIN-42\r\n" in await read_until(ws, b"ready> ")
            await ws.send_str(json.dumps({"type": "resize", "rows": 33, "cols": 99}))
            await ws.send_bytes(b"stty size\n")
            await read_until(ws, b"33 99\r\n")
            await ws.send_bytes(b"exit 5\n")
            messages = [message async for message in ws]
        assert json.loads(messages[-1].data) == {"type": "exit", "exit_code": 5}
        assert ws.close_code == 1000
        assert (await c.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200


async def test_errors_come_before_the_upgrade(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    session: aiohttp.ClientSession,
) -> None:
    sandbox_id = await make_sandbox()
    url = shell_url(fake, sandbox_id)
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13"}
    upgrade["Sec-WebSocket-Key"] = "dGhlIHNhbXBsZSBub25jZQ=="
    async with httpx.AsyncClient() as raw:
        unauthorized = await raw.get(url, headers=upgrade)
        assert unauthorized.status_code == 401
        wrong = await raw.get(url, headers={**upgrade, "X-Api-Key": "cos_live_wrong"})
        assert wrong.status_code == 401
        no_upgrade = await raw.get(url, headers={"X-Api-Key": fake.api_key})
        assert (no_upgrade.status_code, no_upgrade.json()["data"]) == (
            426,
            {"code": "upgrade_required", "message": "expects a WebSocket upgrade"},
        )
        other = await raw.get(url, headers={**upgrade, "X-Api-Key": fake.add_account()})
        assert other.status_code == 404
        bad_size = await raw.get(url + "?rows=0", headers={**upgrade, "X-Api-Key": fake.api_key})
        assert bad_size.json() == {
            "status": "fail",
            "data": {"rows": "must be between 1 and 1000"},
        }
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await session.ws_connect(url)
    assert refused.value.status == 401
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    with pytest.raises(aiohttp.WSServerHandshakeError) as paused:
        await session.ws_connect(url, headers={"X-Api-Key": fake.api_key})
    assert paused.value.status == 409
    assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200
    fake.clock.advance(3600)  # type: ignore[attr-defined]
    with pytest.raises(aiohttp.WSServerHandshakeError) as gone:
        await session.ws_connect(url, headers={"X-Api-Key": fake.api_key})
    assert gone.value.status == 404
    assert fake.sandboxes() == []


async def test_an_idle_client_gets_closed_and_leaves_no_process(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    session: aiohttp.ClientSession,
) -> None:
    sandbox_id = await make_sandbox()
    async with session.ws_connect(
        shell_url(fake, sandbox_id), headers={"X-Api-Key": fake.api_key}
    ) as ws:
        await ws.send_bytes(b"echo ready\n")
        await read_until(ws, b"ready\n")
        clock: VirtualClock = fake.clock  # type: ignore[assignment]
        clock.advance(IDLE_SECONDS + 1)
        closing = await ws.receive()
        assert closing.type == aiohttp.WSMsgType.CLOSE
    assert (ws.close_code, fake.errors) == (4408, [])
    assert await ended(client, sandbox_id) == ["exited"]


async def test_a_flood_of_input_is_bounded_and_a_vanished_client_kills_the_shell(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    session: aiohttp.ClientSession,
) -> None:
    sandbox_id = await make_sandbox()
    url = shell_url(fake, sandbox_id)
    headers = {"X-Api-Key": fake.api_key}
    async with session.ws_connect(url, headers=headers) as ws:
        await ws.send_bytes(b"sleep 1000\n")  # fake time does not move: it never reads again
        for _ in range(80):
            if ws.closed:
                break
            await ws.send_bytes(b"x" * (MAX_FRAME // 2))
        closing = await ws.receive()
        assert closing.type == aiohttp.WSMsgType.CLOSE
        assert (closing.data, closing.extra) == (1008, "input flood: the shell is not reading")
    assert ws.close_code == 1008
    async with session.ws_connect(url, headers=headers) as ws:
        await ws.send_bytes(b"echo second\n")
        await read_until(ws, b"second\n")
    # The client went away without exit: the shell is killed, not left running.
    assert await ended(client, sandbox_id) == ["exited", "exited"]
    assert fake.errors == []


async def test_a_bad_control_message_closes_with_the_reason(
    fake: FakeCreateOS, make_sandbox: MakeSandbox, session: aiohttp.ClientSession
) -> None:
    sandbox_id = await make_sandbox()
    async with session.ws_connect(
        shell_url(fake, sandbox_id), headers={"X-Api-Key": fake.api_key}
    ) as ws:
        await ws.send_str(json.dumps({"type": "resize", "rows": "tall", "cols": 80}))
        closing = await ws.receive()
        assert (closing.type, closing.extra) == (
            aiohttp.WSMsgType.CLOSE,
            "resize needs integer rows and cols",
        )
        await ws.close()
    async with session.ws_connect(
        shell_url(fake, sandbox_id), headers={"X-Api-Key": fake.api_key}
    ) as ws:
        await ws.send_str(json.dumps({"type": "resize", "rows": 5000, "cols": 80}))
        closing = await ws.receive()
        assert closing.extra == "must be between 1 and 1000"
