"""HTTP/2 on the fake's port, as the TS SDK 0.8 opens it: h2c with prior knowledge on
``http://`` (its ``src/http.ts``: ``http2.connect(origin)`` first, HTTP/1.1 only when that
fails), here through httpx's HTTP/2 client (``http1=False``). Every route answers as over
HTTP/1.1, a streamed exec streams, bodies past the flow-control windows go both ways, a stream
the client resets is cancelled, and HTTP/1.1 (with its Upgrade routes) is untouched."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
)
from h2.settings import SettingCodes, Settings
from hpack import Encoder, NeverIndexedHeaderTuple

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
from fake_server.faults import EmptyReply, Fault
from fake_server.http import h2front
from fake_server.http.h2front import PREFACE
from fake_server.http.serve_guards import allowed_hosts, host_guard, request_log
from tests.fake_server.http._tls import serve_tls

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from fake_server.runtime.bashkit import CommandIO

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture(name="h2")
async def _h2(fake: FakeCreateOS) -> AsyncIterator[httpx.AsyncClient]:
    """HTTP/2 with prior knowledge, the fake's default account."""
    async with httpx.AsyncClient(
        base_url=fake.url, headers={"X-Api-Key": fake.api_key}, http1=False, http2=True
    ) as client:
        yield client


async def test_the_api_answers_over_h2c_as_over_http11(
    fake: FakeCreateOS, h2: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    created = await h2.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    assert (created.http_version, created.status_code) == ("HTTP/2", 200)
    assert created.headers["x-request-id"] == "req-000000000001"
    sandbox_id = created.json()["data"]["id"]
    over_h2 = await h2.get(f"/v1/sandboxes/{sandbox_id}")
    over_h1 = await client.get(f"/v1/sandboxes/{sandbox_id}")
    assert over_h1.http_version == "HTTP/1.1"
    assert over_h2.json() == over_h1.json()
    missing = await h2.get("/v1/sandboxes/sb-missing")
    assert (missing.status_code, missing.json()) == (
        404,
        {"status": "fail", "data": {"code": "sandbox_not_found", "message": "sandbox not found"}},
    )
    head = await h2.head(f"/v1/sandboxes/{sandbox_id}")
    assert (head.status_code, head.content) == (405, b"")
    ops = [e.operation for e in fake.journal.events if e.kind == "request"]
    assert ops == [
        "create_sandbox",
        "get_sandbox",
        "get_sandbox",
        "get_sandbox",
        "method_not_allowed",
    ]
    assert fake.errors == []


async def test_many_streams_at_once_on_one_connection(h2: httpx.AsyncClient) -> None:
    created = await h2.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    sandbox_id = created.json()["data"]["id"]
    replies = await asyncio.gather(*(h2.get(f"/v1/sandboxes/{sandbox_id}") for _ in range(40)))
    assert {(r.http_version, r.status_code) for r in replies} == {("HTTP/2", 200)}
    ids = {r.headers["x-request-id"] for r in replies}
    assert len(ids) == 40


async def test_bodies_past_the_windows_go_both_ways(h2: httpx.AsyncClient) -> None:
    """3 MB each way: past HTTP/2's 64 KiB initial windows, so WINDOW_UPDATEs carry both."""
    created = await h2.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    sandbox_id = created.json()["data"]["id"]
    blob = bytes(range(256)) * (3 * 4096)
    files = f"/v1/sandboxes/{sandbox_id}/files"
    uploaded = await h2.put(files, params={"path": "/tmp/blob"}, content=blob)
    assert uploaded.json()["data"] == {"path": "/tmp/blob", "bytes": len(blob)}
    downloaded = await h2.get(files, params={"path": "/tmp/blob"})
    assert downloaded.content == blob


async def test_a_streamed_exec_streams_over_http2(
    fake: FakeCreateOS, h2: httpx.AsyncClient
) -> None:
    """Each frame goes out as the command writes it: the first line arrives while the command
    still waits for the test (the TS SDK 0.8.1 then buffers the stream whole, its own issue
    #36, as against the service)."""
    go_on = asyncio.Event()

    async def two_lines(io: CommandIO) -> int:
        await io.write_stdout(b"one\n")
        with io.clock.idle():
            await go_on.wait()
        await io.write_stdout(b"two\n")
        return 0

    fake.commands.register("two-lines", two_lines)
    created = await h2.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    sandbox_id = created.json()["data"]["id"]
    body = {"cmd": "two-lines", "stream": True}
    url = f"/v1/sandboxes/{sandbox_id}/exec"
    async with h2.stream("POST", url, params={"stream": "true"}, json=body) as stream:
        assert stream.http_version == "HTTP/2"
        lines = stream.aiter_lines()
        assert json.loads(await anext(lines)) == {"stdout": "one\n"}
        go_on.set()  # only now can the command go on
        rest = [json.loads(line) async for line in lines if line]
    assert [frame for frame in rest if "hb" not in frame] == [
        {"stdout": "two\n"},
        {"exit_code": 0},
    ]


async def test_a_stream_the_client_resets_cancels_its_request(
    fake: FakeCreateOS, h2: httpx.AsyncClient
) -> None:
    created = await h2.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    sandbox_id = created.json()["data"]["id"]
    body = {"cmd": "bash", "args": ["-c", "echo up; sleep 1000"], "stream": True}
    url = f"/v1/sandboxes/{sandbox_id}/exec"
    async with h2.stream("POST", url, params={"stream": "true"}, json=body) as stream:
        lines = stream.aiter_lines()
        assert json.loads(await anext(lines)) == {"stdout": "up\n"}
    # The stream was reset (RST_STREAM): the connection carries on.
    again = await h2.get(f"/v1/sandboxes/{sandbox_id}")
    assert again.json()["data"]["status"] == "running"
    finished = [e for e in fake.journal.events if e.kind == "response" and e.operation == "exec"]
    assert [e.status for e in finished] in ([], [200])
    assert fake.errors == []


async def test_a_client_breaking_the_protocol_gets_a_goaway(fake: FakeCreateOS) -> None:
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    writer.write(PREFACE + b"\x00\x00\x04\x09\x00\x00\x00\x00\x01junk")  # CONTINUATION first
    received = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    events = conn.receive_data(received)
    [goaway] = [e for e in events if isinstance(e, ConnectionTerminated)]
    assert goaway.error_code == 1  # PROTOCOL_ERROR
    assert fake.errors == []


async def test_http11_and_a_slow_first_line_are_untouched(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    """A request whose first bytes could still be the preface ("P", "PR") waits for more, then
    goes to HTTP/1.1; the sniffing holds a virtual clock while it waits."""
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    writer.write(b"P")
    await writer.drain()
    await asyncio.sleep(0)
    writer.write(
        f"OST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nX-Api-Key: {fake.api_key}\r\n"
        "Content-Type: application/json\r\nContent-Length: 24\r\nConnection: close\r\n\r\n"
        '{"shape": "s-1vcpu-1gb"}'.encode()
    )
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert len(fake.sandboxes()) == 1
    assert fake.errors == []


async def test_closing_the_fake_ends_open_http2_connections() -> None:
    fake = FakeCreateOS(clock=VirtualClock(), transitions=TransitionPolicy.immediate())
    await fake.__aenter__()
    async with httpx.AsyncClient(
        base_url=fake.url, headers={"X-Api-Key": fake.api_key}, http1=False, http2=True
    ) as h2:
        assert (await h2.get("/v1/sandboxes")).status_code == 200
        await asyncio.wait_for(fake.aclose(), 30)  # a GOAWAY, then the connection closes
        with pytest.raises(httpx.TransportError):
            await h2.get("/v1/sandboxes")
    assert fake.errors == []


async def test_closing_the_fake_closes_a_connection_that_never_spoke() -> None:
    """A connection that sent nothing yet (a browser's preconnect) is not aiohttp's to close:
    the fake's close closes it too, rather than leaving its socket to the collector."""
    fake = FakeCreateOS(clock=VirtualClock(), transitions=TransitionPolicy.immediate())
    await fake.__aenter__()
    host, port = fake.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    async with httpx.AsyncClient() as client:  # served after the silent one was accepted
        assert (await client.get(fake.url + "/readyz")).status_code == 200
    await asyncio.wait_for(fake.aclose(), 30)
    assert await asyncio.wait_for(reader.read(1), 30) == b""  # closed by the fake
    writer.close()
    await writer.wait_closed()
    assert fake.errors == []


async def test_h2_over_tls_by_alpn(tmp_path: Path) -> None:
    """Where TLS is on, a client offering ``h2`` by ALPN gets HTTP/2 (the TS SDK on
    ``https://``); one offering only ``http/1.1`` gets HTTP/1.1 (the CLI's shell and tunnels)."""
    async with serve_tls(tmp_path) as (url, context):
        async with httpx.AsyncClient(verify=context, http2=True) as over_h2:
            reply = await over_h2.get(f"{url}/healthz")
            assert (reply.http_version, reply.json()) == ("HTTP/2", {"up": True})
        async with httpx.AsyncClient(verify=context) as over_h1:
            assert (await over_h1.get(f"{url}/healthz")).http_version == "HTTP/1.1"


async def test_serve_s_log_and_host_guard_see_http2_requests_as_any_other() -> None:
    """``serve``'s outer middlewares (request log, Host check: the ``:authority`` is the Host)
    see an HTTP/2 request as an HTTP/1.1 one, and nothing is logged as an error (before, a
    refused preface left a traceback in serve's log for each TS SDK 0.8 request)."""
    lines: list[str] = []
    fake = FakeCreateOS()
    outer = [request_log(fake.faults, lines.append), host_guard(allowed_hosts("127.0.0.1", []))]
    await fake.start_async(outer_middlewares=outer)
    try:
        async with httpx.AsyncClient(
            base_url=fake.url, headers={"X-Api-Key": fake.api_key}, http1=False, http2=True
        ) as h2:
            assert (await h2.get("/v1/whoami")).status_code == 200
            refused = await h2.get("/v1/whoami", headers={"Host": "rebound.example"})
        assert refused.json()["data"]["code"] == "host_not_allowed"
        assert [line.split()[:3] for line in lines] == [
            ["GET", "/v1/whoami", "200"],
            ["GET", "/v1/whoami", "403"],
        ]
        assert fake.errors == []
    finally:
        await fake.aclose()


async def test_a_dropped_reply_resets_its_stream_only(
    fake: FakeCreateOS, h2: httpx.AsyncClient
) -> None:
    """A fault that drops the reply (``EmptyReply``) ends that stream (RST_STREAM); the
    connection's other streams carry on."""
    fake.faults.add(Fault(operation="whoami", action=EmptyReply(), times=1))
    with pytest.raises(httpx.RemoteProtocolError):
        await h2.get("/v1/whoami")
    assert (await h2.get("/v1/whoami")).status_code == 200
    assert fake.errors == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (b"x-a", b"one\r\nx-injected: two"),
        (b"x-a", b"nul\x00"),
        (b"x a", b"space in the name"),
        (b"x-a:b", b"colon in the name"),
    ],
)
async def test_a_head_http11_cannot_carry_resets_its_stream_only(
    fake: FakeCreateOS, name: bytes, value: bytes
) -> None:
    """A field that would break the HTTP/1.1 head the stream is served with (a line break,
    NUL, a name that is no token) resets that stream (PROTOCOL_ERROR); nothing reaches the
    app, and the connection's next stream is answered."""
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    conn = H2Connection(H2Configuration(client_side=True, validate_outbound_headers=False))
    conn.initiate_connection()
    base = [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"127.0.0.1")]
    for stream_id in (1, 3):  # the same head again: the front's kept form of it resets too
        conn.send_headers(stream_id, [*base, (b":path", b"/healthz"), (name, value)], True)
    conn.send_headers(5, [*base, (b":path", b"/healthz")], end_stream=True)
    writer.write(conn.data_to_send())
    events: list[object] = []
    while not any(isinstance(e, StreamEnded) and e.stream_id == 5 for e in events):
        events += conn.receive_data(await asyncio.wait_for(reader.read(65536), 30))
    writer.close()
    resets = [(e.stream_id, e.error_code) for e in events if isinstance(e, StreamReset)]
    assert resets == [(1, 1), (3, 1)]
    [answer] = [e for e in events if isinstance(e, ResponseReceived)]
    assert (answer.stream_id, dict(answer.headers)[b":status"]) == (5, b"200")
    assert [e.operation for e in fake.journal.events if e.kind == "request"] == ["health"]


async def test_an_idle_connection_is_ended_so_a_node_script_can_exit(
    fake: FakeCreateOS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TS SDK 0.8 never closes its session, and Node runs on while it is open: the fake
    ends a connection left without a stream for ``IDLE_SECONDS`` (a GOAWAY, then the close),
    so a script using the SDK ends (the official examples, run as their READMEs say)."""
    monkeypatch.setattr(h2front, "IDLE_SECONDS", 0.05)
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    headers = [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"127.0.0.1")]
    conn.send_headers(1, [*headers, (b":path", b"/healthz")], end_stream=True)
    writer.write(conn.data_to_send())
    received = b""
    while chunk := await asyncio.wait_for(reader.read(65536), 30):  # until the fake closes
        received += chunk
    writer.close()
    events = conn.receive_data(received)
    assert [type(e) for e in events if isinstance(e, ResponseReceived | ConnectionTerminated)] == [
        ResponseReceived,
        ConnectionTerminated,
    ]
    [goaway] = [e for e in events if isinstance(e, ConnectionTerminated)]
    assert (goaway.error_code, goaway.last_stream_id) == (0, 1)


class _Replay(Encoder):
    """A client's HPACK encoder that sends the blocks it is given, in order."""

    def __init__(self, blocks: list[bytes]) -> None:
        super().__init__()
        self.blocks = blocks

    def encode(self, headers: object, huffman: bool = True) -> bytes:
        return self.blocks.pop(0)


async def test_the_same_header_block_after_the_table_changed_is_read_anew(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    """The front decodes a header block it saw before by looking it up: once the client's
    table changed, the same bytes name other fields and are decoded again."""
    created = (await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()
    source = Encoder()

    def block(path: str, key: str) -> bytes:
        return source.encode(
            [
                (b":method", b"GET"),
                (b":scheme", b"http"),
                NeverIndexedHeaderTuple(b":authority", b"127.0.0.1"),
                (b":path", path.encode()),
                (b"x-api-key", key.encode()),
            ]
        )

    good = f"/v1/sandboxes/{created['data']['id']}"
    first = block(good, fake.api_key)  # path and key added to the client's table
    again = block(good, fake.api_key)  # two references: entries 63 and 62
    other = block("/v1/sandboxes/sb-missing", "wrong-key")  # entries 63 and 62 now
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    conn = H2Connection(H2Configuration(client_side=True, validate_outbound_headers=False))
    conn.encoder = _Replay([first, again, other, again])
    conn.initiate_connection()
    statuses = []
    for stream_id in (1, 3, 5, 7):
        conn.send_headers(stream_id, [(b":method", b"GET")], end_stream=True)
        writer.write(conn.data_to_send())
        events: list[object] = []
        while not any(isinstance(e, StreamEnded) and e.stream_id == stream_id for e in events):
            events += conn.receive_data(await asyncio.wait_for(reader.read(65536), 30))
            writer.write(conn.data_to_send())
        [answer] = [e for e in events if isinstance(e, ResponseReceived)]
        statuses.append(dict(answer.headers)[b":status"])
    writer.close()
    assert statuses == [b"200", b"200", b"401", b"401"]
    assert fake.errors == []


async def test_a_cookie_split_over_fields_reaches_the_app_as_one(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    """HTTP/2 lets a client send each cookie as a field of its own; the HTTP/1.1 head the
    stream is served with carries them as one ``Cookie`` (RFC 9113 §8.2.3), so the dashboard
    finds its session cookie after another one."""
    login = await client.post("/_fake/ui/login", json={"key": fake.control_key})
    token = login.cookies["createos_ui"].encode()
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    base = [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"127.0.0.1")]
    cookies = [(b"cookie", b"theme=dark"), (b"cookie", b"createos_ui=" + token)]
    conn.send_headers(1, [*base, (b":path", b"/_fake/ui/api/session"), *cookies], True)
    writer.write(conn.data_to_send())
    events: list[object] = []
    while not any(isinstance(e, StreamEnded) and e.stream_id == 1 for e in events):
        events += conn.receive_data(await asyncio.wait_for(reader.read(65536), 30))
    writer.close()
    body = b"".join(e.data for e in events if isinstance(e, DataReceived))
    assert json.loads(body)["logged_in"] is True


@pytest.mark.parametrize("stream_window", [16384, 1 << 20])
async def test_an_answer_past_a_small_window_waits_for_the_client_s_updates(
    fake: FakeCreateOS, client: httpx.AsyncClient, stream_window: int
) -> None:
    """A client that keeps its windows small (Node's defaults: 64 KiB) gets a large answer as
    it hands window back: per stream when the stream's window is the smaller, per connection
    when the connection's is."""
    created = (await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()
    files = f"/v1/sandboxes/{created['data']['id']}/files"
    blob = bytes(range(256)) * 1024  # 256 KiB
    await client.put(files, params={"path": "/tmp/blob"}, content=blob)
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    conn = H2Connection(H2Configuration(client_side=True))
    conn.local_settings = Settings(
        client=True, initial_values={SettingCodes.INITIAL_WINDOW_SIZE: stream_window}
    )
    conn.initiate_connection()
    path = f"{files}?path=/tmp/blob".encode()
    base = [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"127.0.0.1")]
    conn.send_headers(1, [*base, (b":path", path), (b"x-api-key", fake.api_key.encode())], True)
    writer.write(conn.data_to_send())
    body = b""
    ended = False
    while not ended:
        for event in conn.receive_data(await asyncio.wait_for(reader.read(65536), 30)):
            if isinstance(event, DataReceived):
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, 1)
            ended = ended or isinstance(event, StreamEnded)
        writer.write(conn.data_to_send())
    writer.close()
    assert body == blob
