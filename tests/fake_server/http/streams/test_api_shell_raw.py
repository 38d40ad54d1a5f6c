"""``POST …/shell`` through a raw socket, as the official CLI (``createos sandbox shell``) speaks
it: an HTTP Upgrade, then framed keystrokes and resizes in, the PTY's raw bytes out; on both
runtimes; every refusal before the upgrade; a bad frame, an idle or a vanished client ends the
shell."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import TransitionPolicy, VirtualClock
from fake_server.http.handlers.shells import IDLE_SECONDS, MAX_FRAME
from fake_server.http.streams.shell_frames import RawFrames, Resize

if TYPE_CHECKING:
    from fake_server import FakeCreateOS
    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def keys(data: bytes) -> bytes:
    return b"\x00" + struct.pack("!I", len(data)) + data


def resize(rows: int, cols: int) -> bytes:
    return b"\x01" + struct.pack("!IHH", 4, rows, cols)


async def open_shell(fake: FakeCreateOS, sandbox_id: str, query: str = "") -> Stream:
    """The CLI's handshake: ``Upgrade: tcp-tunnel``, ``Content-Length: 0``, then the 101."""
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    writer.write(
        f"POST /v1/sandboxes/{sandbox_id}/shell{query} HTTP/1.1\r\nHost: {fake.host}\r\n"
        f"X-Api-Key: {fake.api_key}\r\nConnection: Upgrade\r\nUpgrade: tcp-tunnel\r\n"
        "Content-Length: 0\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n"), head
    assert b"\r\nUpgrade: tcp-tunnel\r\n" in head
    return reader, writer


async def read_until(reader: asyncio.StreamReader, marker: bytes) -> bytes:
    return await asyncio.wait_for(reader.readuntil(marker), 30)


async def ended(client: httpx.AsyncClient, sandbox_id: str) -> list[str]:
    """Each shell's state once it has ended (the handler kills it after the socket closed)."""
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    states = []
    for process in (await client.get(base)).json()["data"]["processes"]:
        waited = await client.get(f"{base}/{process['process_id']}/wait")
        states.append(waited.json()["data"]["state"])
    return states


async def test_bashkit_shell_keystrokes_resize_and_exit(
    fake: FakeCreateOS, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    reader, writer = await open_shell(fake, sandbox_id, "?rows=10&cols=40")
    writer.write(keys(b"cd /tmp; echo $((6 * 7)); stty size\n"))
    assert await read_until(reader, b"10 40\n") == b"42\n10 40\n"
    # A resize and keystrokes in one write, keystrokes split across frames.
    writer.write(resize(30, 100) + keys(b"pwd; st") + keys(b"ty size\n"))
    assert await read_until(reader, b"30 100\n") == b"/tmp\n30 100\n"
    writer.write(keys(b"exit 3\n"))
    assert await reader.read() == b""  # the shell's end closes the stream
    writer.close()
    [shell] = fake.sandbox(sandbox_id).processes.values()
    assert (shell.spec.cmd, shell.spec.args, shell.exit_code) == ("/bin/bash", ("-l",), 3)
    assert fake.errors == []


async def test_process_runtime_shell_is_a_real_login_shell_on_a_pty(make_fake: MakeFake) -> None:
    fake = await make_fake(
        clock=VirtualClock(), transitions=TransitionPolicy.immediate(), runtime="process"
    )
    async with httpx.AsyncClient(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as c:
        created = await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = created.json()["data"]["id"]
        reader, writer = await open_shell(fake, sandbox_id)
        writer.write(keys(b"PS1='ready''> '; shopt -q login_shell && echo LOGIN-$((6*7))\n"))
        login = await read_until(reader, b"ready> ")  # the prompt, not its echo
        assert b"LOGIN-42\r\n" in login
        writer.write(resize(33, 99) + keys(b"stty size\n"))
        await read_until(reader, b"33 99\r\n")
        writer.write(keys(b"exit 5\n"))
        await asyncio.wait_for(reader.read(), 30)  # the rest of the output, then EOF
        writer.close()
        [shell] = fake.sandbox(sandbox_id).processes.values()
        assert shell.exit_code == 5
        assert (await c.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200


async def test_refusals_come_before_the_upgrade(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    url = f"/v1/sandboxes/{sandbox_id}/shell"
    upgrade = {"Connection": "Upgrade", "Upgrade": "tcp-tunnel"}
    async with httpx.AsyncClient(base_url=fake.url) as raw:
        assert (await raw.post(url, headers=upgrade)).status_code == 401
        wrong = await raw.post(url, headers={**upgrade, "X-Api-Key": "cos_live_wrong"})
        assert wrong.status_code == 401
        other = await raw.post(url, headers={**upgrade, "X-Api-Key": fake.add_account()})
        assert other.status_code == 404
    plain = await client.post(url)
    assert (plain.status_code, plain.json()["data"]) == (
        426,
        {"code": "upgrade_required", "message": "expects an HTTP Upgrade"},
    )
    bad_size = await client.post(url + "?cols=0", headers=upgrade)
    assert bad_size.json() == {"status": "fail", "data": {"cols": "must be between 1 and 1000"}}
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    paused = await client.post(url, headers=upgrade)
    assert (paused.status_code, paused.json()["data"]["code"]) == (409, "not_running")
    assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200
    fake.clock.advance(3600)  # type: ignore[attr-defined]
    assert (await client.post(url, headers=upgrade)).status_code == 404
    assert fake.sandboxes() == []


@pytest.mark.parametrize(
    "frame",
    [
        b"\x07\x00\x00\x00\x00",
        b"\x00" + struct.pack("!I", MAX_FRAME + 1),
        b"\x01\x00\x00\x00\x02ab",
    ],
    ids=["unknown type", "oversized", "short resize"],
)
async def test_a_bad_frame_closes_the_stream_and_kills_the_shell(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox, frame: bytes
) -> None:
    sandbox_id = await make_sandbox()
    reader, writer = await open_shell(fake, sandbox_id)
    writer.write(keys(b"echo ready\n"))
    await read_until(reader, b"ready\n")
    writer.write(frame)
    assert await asyncio.wait_for(reader.read(), 30) == b""
    writer.close()
    assert await ended(client, sandbox_id) == ["exited"]
    assert fake.errors == []


async def test_an_idle_or_vanished_client_leaves_no_process(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    reader, writer = await open_shell(fake, sandbox_id)
    writer.write(keys(b"echo ready\n"))
    await read_until(reader, b"ready\n")
    clock: VirtualClock = fake.clock  # type: ignore[assignment]
    clock.advance(IDLE_SECONDS + 1)
    assert await asyncio.wait_for(reader.read(), 30) == b""
    writer.close()
    reader, writer = await open_shell(fake, sandbox_id)
    writer.write(keys(b"sleep 1000\n"))  # fake time does not move: it never ends by itself
    writer.close()  # the client goes away without exit
    await writer.wait_closed()
    assert await ended(client, sandbox_id) == ["exited", "exited"]
    assert fake.errors == []


async def test_raw_frames_decode_across_chunks_and_name_what_is_wrong() -> None:
    frames = RawFrames(16)
    stream = keys(b"ab") + resize(3, 4) + keys(b"") + keys(b"cdef")
    assert frames.feed(stream[:3]) == []
    assert frames.feed(stream[3:10]) == [b"ab"]
    assert frames.feed(stream[10:]) == [Resize(3, 4), b"cdef"]
    with pytest.raises(ValueError, match=r"^unknown frame type 9 \(0 input, 1 resize\)$"):
        RawFrames(16).feed(b"\x09\x00\x00\x00\x00")
    with pytest.raises(ValueError, match=r"^frame of 17 bytes; the limit is 16$"):
        RawFrames(16).feed(b"\x00" + struct.pack("!I", 17))
    with pytest.raises(ValueError, match=r"^a resize frame holds 4 bytes: rows and cols$"):
        RawFrames(16).feed(b"\x01\x00\x00\x00\x02ab")


async def test_bashkit_shell_as_the_cli_opens_it_takes_the_first_resize_names_its_tty(
    fake: FakeCreateOS, make_sandbox: MakeSandbox
) -> None:
    """The CLI's ``runShellPTY`` (``cmd/sandbox/shell.go``): no size in the request, then its
    window in a resize frame right after the 101 (``sendResize``), then keystrokes. The shell
    has that window, ``tty`` names its terminal and ``TERM`` is a terminal's (the CLI sends
    none; docs/fidelity.md)."""
    sandbox_id = await make_sandbox()
    reader, writer = await open_shell(fake, sandbox_id)
    writer.write(resize(40, 120))
    writer.write(keys(b"stty size; tty; echo $TERM\n"))
    assert await read_until(reader, b"color\n") == b"40 120\n/dev/pts/0\nxterm-256color\n"
    writer.close()


async def test_process_runtime_shell_as_the_cli_opens_it(make_fake: MakeFake) -> None:
    """As above on the process runtime: the PTY is the sandbox's own (``/dev/pts/0`` in its
    devpts, where ``tty`` finds it; one on the host's devpts is ``not a tty`` inside)."""
    fake = await make_fake(
        clock=VirtualClock(), transitions=TransitionPolicy.immediate(), runtime="process"
    )
    async with httpx.AsyncClient(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as c:
        created = await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = created.json()["data"]["id"]
        reader, writer = await open_shell(fake, sandbox_id)
        writer.write(resize(40, 120))
        writer.write(keys(b"stty size; tty; echo $TERM; exit\n"))
        output = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        assert output.endswith(b"40 120\r\n/dev/pts/0\r\nxterm-256color\r\nlogout\r\n")
        assert (await c.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 200
