"""``execute_command`` against a scripted server on loopback: the /connect protocol edge cases.

The fake cannot (yet) produce sequence gaps, malformed lines, cut streams or odd status codes on
demand, so this file runs a tiny aiohttp app on 127.0.0.1:0 in the test's loop that answers each
``/connect`` attempt from a script. Everything still goes over real HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from fake_server import clock_transport
from fake_server.clock import EXCHANGE_HEADER, VirtualClock
from pytest_createos.provider._client import CreateosClient, HttpPool, StreamReadError
from pytest_createos.provider._errors import (
    CreateosApiError,
    CreateosCleanupError,
    CreateosError,
)
from pytest_createos.provider._execute import execute_command
from pytest_createos.provider._pacing import Pacer
from pytest_createos.provider._signal import AbortController, deadline_signal
from pytest_createos.provider._types import ExecuteParams, ExecuteResult

SANDBOX = "sb-1"
PROC = "proc-1"
DELETE = ("DELETE", f"/v1/sandboxes/{SANDBOX}/processes/{PROC}?grace_ms=1000")


def data(seq: int, payload: bytes, stream: str = "stdout") -> str:
    encoded = base64.b64encode(payload).decode()
    return json.dumps({"type": "data", "seq": seq, "stream": stream, "data_base64": encoded})


def exit_frame(code: int = 0) -> str:
    return json.dumps({"type": "exit", "exit_code": code})


@dataclass
class Connect:
    """One answer to GET /connect: a status, or lines then how the stream ends."""

    lines: list[str] = field(default_factory=list)
    status: int = 200
    end: str = "eof"  # "eof" | "cut" (connection dropped mid-body) | "hang"


@dataclass
class Server:
    clock: VirtualClock
    connects: list[Connect] = field(default_factory=list)
    create: Callable[[], web.Response] | None = None
    close_status: int = 200
    delete_status: int = 200
    delete_data: dict[str, Any] = field(default_factory=lambda: {"tree_exited": True})
    calls: list[tuple[str, str]] = field(default_factory=list)
    bodies: list[Any] = field(default_factory=list)
    uploads: dict[str, bytes] = field(default_factory=dict)
    url: str = ""

    def ok(self, data: dict[str, Any], status: int = 200) -> web.Response:
        return web.json_response({"status": "success", "data": data}, status=status)

    def fail(self, status: int) -> web.Response:
        return web.json_response(
            {"status": "fail", "data": {"secret": "body-secret"}}, status=status
        )

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Reports to the clock like the fake: the request, the head, every streamed write."""
        exchange = request.headers.get(EXCHANGE_HEADER)
        announced = self.clock.request_arrived(exchange)
        with self.clock.busy():
            response = await self.route(request, exchange if announced else None)
        if announced and not response.prepared:
            self.clock.response_sent(exchange)
        return response

    async def route(self, request: web.Request, exchange: str | None) -> web.StreamResponse:
        self.calls.append((request.method, request.path_qs))
        path = request.path
        if request.method == "PUT" and path.endswith("/files"):
            self.uploads[request.query["path"]] = await request.read()
            return self.ok({})
        if request.method == "POST" and path.endswith("/processes"):
            self.bodies.append(await request.json())
            return self.create() if self.create else self.ok({"process_id": PROC})
        if path.endswith("/stdin/close"):
            return self.ok({}) if self.close_status == 200 else self.fail(self.close_status)
        if path.endswith("/exec"):
            self.bodies.append(await request.json())
            return self.ok({"result": {"exit_code": 0, "stdout": "", "stderr": ""}})
        if request.method == "DELETE":
            if self.delete_status != 200:
                return self.fail(self.delete_status)
            return self.ok(self.delete_data)
        if path.endswith("/connect"):
            return await self.connect(request, exchange)
        return self.fail(500)

    async def connect(self, request: web.Request, exchange: str | None) -> web.StreamResponse:
        step = self.connects.pop(0) if self.connects else Connect(status=503)
        if step.status != 200:
            return self.fail(step.status)
        response = web.StreamResponse()
        response.content_type = "application/x-ndjson"
        response.enable_chunked_encoding()
        if exchange is not None:
            self.clock.response_sent(exchange)
        await response.prepare(request)
        for line in step.lines:
            data = line.encode() + b"\n"
            if exchange is not None:
                self.clock.response_sent(exchange, len(data))
            await response.write(data)
        if step.end == "cut":
            await asyncio.sleep(0)  # let the bytes leave before the socket dies
            assert request.transport is not None
            request.transport.abort()
            return response
        if step.end == "hang":
            await self.clock.sleep(3600)
        await response.write_eof()
        return response


@pytest_asyncio.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    clock = VirtualClock()
    yield clock
    clock.close()


@pytest_asyncio.fixture
async def server(clock: VirtualClock) -> AsyncIterator[Server]:
    srv = Server(clock)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", srv.handle)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    srv.url = f"http://127.0.0.1:{port}"
    yield srv
    await runner.cleanup()


@pytest_asyncio.fixture
async def client(server: Server, clock: VirtualClock) -> AsyncIterator[CreateosClient]:
    pool = HttpPool(clock_transport(clock))
    try:
        yield CreateosClient(
            http=pool.get(server.url),
            api_url=server.url,
            api_key="test-key",
            timeout_ms=30_000,
            clock=clock,
            pacer=Pacer.disabled(),
        )
    finally:
        await pool.aclose()


Run = Callable[..., Awaitable[ExecuteResult]]


@pytest.fixture
def run(client: CreateosClient, clock: VirtualClock) -> Run:
    async def run(
        params: ExecuteParams | None = None,
        *,
        log: Callable[[str, str], object] | None = None,
        timeout: float = 60.0,
        controller: AbortController | None = None,
        **kwargs: Any,
    ) -> ExecuteResult:
        params = params or ExecuteParams(command="/bin/echo", args=("hi",))
        async with deadline_signal(clock, timeout) as deadline:
            signal = controller.signal if controller is not None else deadline
            return await execute_command(
                client, SANDBOX, params, signal, log, clock=clock, **kwargs
            )

    return run


def connects(server: Server) -> list[str]:
    return [path for method, path in server.calls if "/connect" in path]


# -- the happy path ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_exit_code_and_both_streams(server: Server, run: Run) -> None:
    server.connects = [
        Connect(
            [
                json.dumps({"type": "heartbeat"}),
                data(1, b"out\n"),
                data(2, b"err", "stderr"),
                exit_frame(3),
            ]
        )
    ]
    logged: list[tuple[str, str]] = []
    result = await run(
        ExecuteParams(command="/bin/echo", args=("x",), cwd="/paperclip-workspace"),
        log=lambda stream, text: logged.append((stream, text)),
    )
    assert result == ExecuteResult(
        exit_code=3,
        signal=None,
        timed_out=False,
        stdout="out\n",
        stderr="err",
        metadata={"processId": PROC, "outputTruncated": False},
    )
    assert logged == [("stdout", "out\n"), ("stderr", "err")]
    assert server.calls == [
        ("POST", f"/v1/sandboxes/{SANDBOX}/processes"),
        ("POST", f"/v1/sandboxes/{SANDBOX}/processes/{PROC}/stdin/close"),
        ("GET", f"/v1/sandboxes/{SANDBOX}/processes/{PROC}/connect?after=0"),
    ]
    assert server.bodies == [
        {
            "cmd": "/bin/bash",
            "args": ["-lc", "cd -- '/paperclip-workspace' || exit\nexec env  '/bin/echo' 'x'"],
            "cwd": "/paperclip-workspace",
        }
    ]


@pytest.mark.asyncio
async def test_signal_exit_and_no_cwd_in_body(server: Server, run: Run) -> None:
    server.connects = [Connect([json.dumps({"type": "exit", "signal": "SIGKILL"})])]
    result = await run()
    assert (result.exit_code, result.signal, result.timed_out) == (None, "SIGKILL", False)
    assert "cwd" not in server.bodies[0]
    assert "env" not in server.bodies[0]


@pytest.mark.asyncio
async def test_stdin_is_staged_redirected_and_removed(server: Server, run: Run) -> None:
    server.connects = [Connect([exit_frame(0)])]
    await run(ExecuteParams(command="cat", stdin="secret stdin €"))
    (staged,) = server.uploads
    assert staged.startswith("/tmp/paperclip-stdin-")
    assert server.uploads[staged] == "secret stdin €".encode()
    script = server.bodies[0]["args"][1]
    assert script == f"exec env  'cat' < '{staged}'"
    assert "secret" not in json.dumps(server.bodies[0])
    assert server.bodies[1] == {"cmd": "/bin/rm", "args": ["-f", "--", staged]}
    assert server.calls[-1] == ("POST", f"/v1/sandboxes/{SANDBOX}/exec")
    assert not any("/input" in path for _, path in server.calls)


@pytest.mark.asyncio
async def test_stdin_lone_surrogate_is_sent_as_replacement_char(server: Server, run: Run) -> None:
    server.connects = [Connect([exit_frame(0)])]
    await run(ExecuteParams(command="cat", stdin="a\ud800b"))
    assert list(server.uploads.values()) == ["a\ufffdb".encode()]


@pytest.mark.asyncio
async def test_stdin_close_conflict_is_tolerated(server: Server, run: Run) -> None:
    server.close_status = 409
    server.connects = [Connect([exit_frame(0)])]
    assert (await run()).exit_code == 0
    assert DELETE not in server.calls


# -- reconnects ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_replayed_frames_are_dropped_after_reconnect(server: Server, run: Run) -> None:
    server.connects = [
        Connect([data(1, b"a"), data(2, b"b")], end="cut"),
        Connect([data(1, b"a"), data(2, b"b"), data(3, b"c"), exit_frame(0)]),
    ]
    result = await run()
    assert result.stdout == "abc"
    assert connects(server)[-2:] == [
        f"/v1/sandboxes/{SANDBOX}/processes/{PROC}/connect?after=0",
        f"/v1/sandboxes/{SANDBOX}/processes/{PROC}/connect?after=2",
    ]


@pytest.mark.asyncio
async def test_euro_split_across_reconnect_is_logged_once(server: Server, run: Run) -> None:
    euro = "€".encode()
    server.connects = [
        Connect([data(1, euro[:1])], end="eof"),
        Connect([data(2, euro[1:]), exit_frame(0)]),
    ]
    logged: list[tuple[str, str]] = []
    result = await run(log=lambda s, t: logged.append((s, t)))
    assert result.stdout == "€"
    assert logged == [("stdout", "€")]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([Connect(status=503)] * 4, "CreateOS process output connection failed."),
        ([Connect(status=429)] * 4, "CreateOS process output connection failed."),
        ([Connect()] * 4, "CreateOS process stream ended without an exit status."),
        ([Connect(end="cut")] * 4, "CreateOS process stream ended without an exit status."),
        (
            [Connect(status=502), Connect(), Connect(status=500), Connect(status=503)],
            "CreateOS process output connection failed.",
        ),
    ],
)
async def test_reconnects_share_one_bound(
    server: Server, run: Run, clock: VirtualClock, steps: list[Connect], message: str
) -> None:
    server.connects = list(steps)
    start = clock.now()
    with pytest.raises(CreateosError) as info:
        await run()
    assert str(info.value) == message
    assert len(connects(server)) == 4
    assert clock.now() - start == pytest.approx(0.75)  # three 250 ms pauses on the clock
    assert server.calls[-1] == DELETE


@pytest.mark.asyncio
async def test_client_error_on_connect_is_final(server: Server, run: Run) -> None:
    server.connects = [Connect(status=404)]
    with pytest.raises(CreateosApiError) as info:
        await run()
    assert str(info.value) == "CreateOS request failed (HTTP 404) during output connection."
    assert info.value.status == 404
    assert "secret" not in str(info.value)
    assert len(connects(server)) == 1
    assert server.calls[-1] == DELETE


@pytest.mark.asyncio
async def test_a_cut_stream_is_a_read_failure(server: Server, client: CreateosClient) -> None:
    # Guards the premise of the reconnect tests: "cut" really breaks the body mid-stream.
    server.connects = [Connect([data(1, b"a")], end="cut")]
    received: list[str] = []

    async def read_all() -> None:
        path = f"/sandboxes/{SANDBOX}/processes/{PROC}/connect?after=0"
        async with client.stream("GET", path) as chunks:
            async for text in chunks:
                received.append(text)

    with pytest.raises(StreamReadError):
        await read_all()
    assert "".join(received) == data(1, b"a") + "\n"


# -- fail closed ---------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("step", "message"),
    [
        (Connect([data(1, b"a"), data(3, b"c")]), "CreateOS process output has a sequence gap."),
        (Connect(status=410), "CreateOS process output was evicted before it could be read."),
        (
            Connect(
                [
                    json.dumps(
                        {
                            "type": "error",
                            "error": "output_offset_expired",
                            "oldest_available_seq": 5,
                        }
                    )
                ]
            ),
            "CreateOS process output was evicted before it could be read.",
        ),
        (
            Connect([json.dumps({"type": "error", "error": "boom"})]),
            "CreateOS process stream reported an error.",
        ),
        (Connect(["{not json"]), "CreateOS returned an invalid process frame."),
        (Connect([json.dumps({"type": "stdout"})]), "CreateOS returned an unknown process event."),
        (Connect([json.dumps({"type": "exit"})]), "CreateOS process exit status is missing."),
        (Connect([data(1, b"a", "pty")]), "CreateOS process output is invalid."),
        (Connect(["x" * 1_048_577]), "CreateOS process frame is too large."),
    ],
)
async def test_protocol_errors_fail_and_kill_the_process(
    server: Server, run: Run, step: Connect, message: str
) -> None:
    server.connects = [step]
    with pytest.raises(CreateosError) as info:
        await run()
    assert str(info.value) == message
    assert type(info.value) is CreateosError
    assert len(connects(server)) == 1
    assert server.calls[-1] == DELETE


@pytest.mark.asyncio
async def test_capture_cap_flags_truncation(server: Server, run: Run) -> None:
    server.connects = [Connect([data(1, b"0123456789"), data(2, b"ab", "stderr"), exit_frame()])]
    result = await run(capture_limit=4)
    assert (result.stdout, result.stderr) == ("6789", "ab")
    assert result.metadata == {"processId": PROC, "outputTruncated": True}


# -- creation ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_server_error_on_creation_is_ambiguous(server: Server, run: Run) -> None:
    server.create = lambda: server.fail(502)
    with pytest.raises(CreateosCleanupError) as info:
        await run()
    assert str(info.value) == (
        "CreateOS process creation could not be confirmed; destroy the lease before reusing it."
    )
    assert [m for m, _ in server.calls] == ["POST"]  # never retried, nothing to delete


@pytest.mark.asyncio
async def test_invalid_process_id_is_ambiguous(server: Server, run: Run) -> None:
    server.create = lambda: server.ok({"process_id": "../etc"})
    with pytest.raises(CreateosCleanupError):
        await run()
    assert len(server.calls) == 1


@pytest.mark.asyncio
async def test_client_error_on_creation_is_definite(server: Server, run: Run) -> None:
    server.create = lambda: server.fail(400)
    with pytest.raises(CreateosApiError) as info:
        await run()
    assert type(info.value) is CreateosApiError
    assert str(info.value) == "CreateOS request failed (HTTP 400) during process creation."


@pytest.mark.asyncio
async def test_stdin_close_failure_kills_the_process(server: Server, run: Run) -> None:
    server.close_status = 500
    with pytest.raises(CreateosApiError) as info:
        await run()
    assert str(info.value) == "CreateOS request failed (HTTP 500) during stdin close."
    assert server.calls[-1] == DELETE


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "params",
    [
        ExecuteParams(command=""),
        ExecuteParams(command="ls", env={"BAD-KEY": "v"}),
        ExecuteParams(command="ls", env={"OK": "a\x00"}),
        ExecuteParams(command="ls", args=("\x00",), stdin="data"),
    ],
)
async def test_bad_input_makes_no_request(server: Server, run: Run, params: ExecuteParams) -> None:
    with pytest.raises(CreateosError):
        await run(params)
    assert server.calls == []


@pytest.mark.asyncio
async def test_invalid_lease_id_makes_no_request(
    server: Server, client: CreateosClient, clock: VirtualClock
) -> None:
    with pytest.raises(CreateosError) as info:
        await execute_command(
            client, "sb/../x", ExecuteParams(command="ls"), AbortController().signal, clock=clock
        )
    assert str(info.value) == "CreateOS returned an invalid resource ID."
    assert server.calls == []


# -- timeout, cancellation, cleanup --------------------------------------------------------------


@pytest.mark.asyncio
async def test_timeout_returns_partial_output_and_kills(
    server: Server, run: Run, clock: VirtualClock
) -> None:
    server.connects = [Connect([data(1, b"partial"), data(2, b"\xe2\x82")], end="hang")]
    start = clock.now()
    result = await run(timeout=1.0)
    assert result == ExecuteResult(
        exit_code=None,
        signal=None,
        timed_out=True,
        stdout="partial\ufffd",
        stderr="",
        metadata={"processId": PROC, "outputTruncated": False},
    )
    assert clock.now() - start == pytest.approx(1.0)
    assert server.calls[-1] == DELETE


@pytest.mark.asyncio
async def test_host_cancellation(server: Server, run: Run) -> None:
    controller = AbortController()
    server.connects = [Connect([data(1, b"first")], end="hang")]
    with pytest.raises(CreateosError) as info:
        await run(controller=controller, log=lambda s, t: controller.abort())
    assert str(info.value) == "CreateOS command was cancelled."
    assert server.calls[-1] == DELETE


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "tree_exited"), [(200, False), (200, None), (500, True), (409, True)]
)
async def test_unconfirmed_termination_is_a_cleanup_error(
    server: Server, run: Run, status: int, tree_exited: object
) -> None:
    server.delete_status = status
    server.delete_data = {} if tree_exited is None else {"tree_exited": tree_exited}
    server.connects = [Connect(["garbage"])]
    with pytest.raises(CreateosCleanupError) as info:
        await run()
    assert str(info.value) == "CreateOS command cleanup failed; process termination is unconfirmed."


@pytest.mark.asyncio
async def test_timeout_with_failed_kill_is_a_cleanup_error(server: Server, run: Run) -> None:
    server.delete_status = 503
    server.connects = [Connect(end="hang")]
    with pytest.raises(CreateosCleanupError):
        await run(timeout=1.0)


@pytest.mark.asyncio
async def test_process_already_gone_is_fine(server: Server, run: Run) -> None:
    server.delete_status = 404
    server.connects = [Connect(["garbage"])]
    with pytest.raises(CreateosError) as info:
        await run()
    assert str(info.value) == "CreateOS returned an invalid process frame."
