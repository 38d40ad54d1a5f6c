"""The HTTP client over real loopback HTTP (spec §1.1): envelopes, labels, redaction, deadlines."""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio
from aiohttp import web

from fake_server import clock_transport
from pytest_createos.provider import (
    CreateosApiError,
    CreateosError,
    CreateosProvider,
    Environment,
    Pacer,
)
from pytest_createos.provider._client import (
    CreateosClient,
    HttpPool,
    StreamReadError,
    _ssl_context,
    identifier,
    operation_label,
)
from pytest_createos.provider._errors import ConnectionFailedError
from pytest_createos.provider._signal import (
    AbortController,
    OperationCancelled,
    OperationTimeout,
    any_signal,
    deadline_signal,
)
from tests.provider.conftest import success

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.provider.conftest import ScriptedApi

SECRET = "test-secret-key"


@pytest_asyncio.fixture(name="client")
async def _client(scripted: ScriptedApi) -> AsyncIterator[CreateosClient]:
    pool = HttpPool(clock_transport(scripted.clock))
    yield CreateosClient(
        http=pool.get(scripted.url),
        api_url=scripted.url,
        api_key=SECRET,
        timeout_ms=5000,
        clock=scripted.clock,
        pacer=Pacer.disabled(),
    )
    await pool.aclose()


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("/sandboxes/sb-1/files?path=%2Fx", "file transfer"),
        ("/sandboxes/sb-1/processes/p-1/stdin/close", "stdin close"),
        ("/sandboxes/sb-1/processes/p-1/connect?after=0", "output connection"),
        ("/sandboxes/sb-1/processes", "process creation"),
        ("/sandboxes/sb-1/processes/p-1?grace_ms=1000", "process cleanup"),
        ("/sandboxes/sb-1/processes/p-1/wait?scope=tree", "process cleanup"),
        ("/sandboxes/sb-1/exec", "workspace command"),
        ("/sandboxes/sb-1/exec?stream=true", "sandbox lifecycle"),
        ("/sandboxes/sb-1/pause", "sandbox lifecycle"),
        ("/sandboxes", "sandbox lifecycle"),
    ],
)
def test_operation_labels(path: str, label: str) -> None:
    """Errors name the operation with a fixed label chosen by the first matching rule."""
    assert operation_label(path) == label


@pytest.mark.parametrize("value", ["sb-01K", "sb_01K", "a" * 200, "A-z_9"])
def test_identifier_accepts_safe_ids(value: str) -> None:
    """Real id shapes pass unchanged."""
    assert identifier(value) == value


@pytest.mark.parametrize("value", ["", "a" * 201, "../x", "sb 1", "sb/1", None, 5, "sb-1\n"])
def test_identifier_rejects_unsafe_ids(value: object) -> None:
    """Anything that could change a URL path is refused."""
    with pytest.raises(CreateosError) as caught:
        identifier(value)
    assert str(caught.value) == "CreateOS returned an invalid resource ID."


@pytest.mark.asyncio
async def test_json_request_sends_key_and_body_and_returns_data(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """The key header is always sent; JSON content type only when there is a body."""

    async def handler(request: web.Request) -> web.Response:
        return success({"id": "sb-1", "seen": request.path})

    scripted.handler = handler
    data = await client.request_json("POST", "/sandboxes", body={"shape": "s"})
    assert data == {"id": "sb-1", "seen": "/v1/sandboxes"}
    await client.request_json("POST", "/sandboxes/sb-1/pause")
    with_body, without_body = scripted.calls
    assert with_body.headers["X-Api-Key"] == SECRET
    assert with_body.headers["Content-Type"] == "application/json"
    assert with_body.json() == {"shape": "s"}
    assert without_body.headers["X-Api-Key"] == SECRET
    assert "Content-Type" not in without_body.headers
    assert without_body.body == b""


@pytest.mark.asyncio
async def test_cookies_set_by_the_api_are_not_sent_back(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A ``Set-Cookie`` answer is not kept: ``fetch`` in the TypeScript provider keeps none."""

    async def handler(request: web.Request) -> web.Response:
        response = success({"id": "sb-1"})
        response.set_cookie("session", "s1", path="/")
        return response

    scripted.handler = handler
    await client.request_json("GET", "/sandboxes/sb-1")
    await client.request_json("GET", "/sandboxes/sb-1")
    assert [call.headers.get("Cookie") for call in scripted.calls] == [None, None]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/sandboxes", 401, "CreateOS request failed (HTTP 401) during sandbox lifecycle."),
        (
            "/sandboxes/sb-1/processes",
            503,
            "CreateOS request failed (HTTP 503) during process creation.",
        ),
        (
            "/sandboxes/sb-1/exec",
            429,
            "CreateOS request failed (HTTP 429) during workspace command.",
        ),
    ],
)
async def test_error_status_never_reveals_the_body(
    scripted: ScriptedApi, client: CreateosClient, path: str, status: int, message: str
) -> None:
    """Only the status and the fixed label reach the message, never the body or the key."""

    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"status": "fail", "data": f"{SECRET} body"}, status=status)

    scripted.handler = handler
    with pytest.raises(CreateosApiError) as caught:
        await client.request_json("POST", path, body={})
    assert str(caught.value) == message
    assert caught.value.status == status
    assert SECRET not in repr(caught.value.args)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "CreateOS returned invalid JSON."),
        (b"\xff\xfe", "CreateOS returned invalid JSON."),
        (b"[1, 2]", "CreateOS returned invalid JSON."),
        (b'{"status": "fail", "data": {}}', "CreateOS returned an unsuccessful response."),
        (b'{"data": {}}', "CreateOS returned an unsuccessful response."),
        (b'{"status": "success", "data": null}', "CreateOS returned an invalid response."),
        (b'{"status": "success", "data": []}', "CreateOS returned an invalid response."),
        (b'{"status": "success"}', "CreateOS returned an invalid response."),
    ],
)
async def test_bad_success_envelopes(
    scripted: ScriptedApi, client: CreateosClient, body: bytes, message: str
) -> None:
    """A 2xx answer must be a success envelope with an object ``data``."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    scripted.handler = handler
    with pytest.raises(CreateosError) as caught:
        await client.request_json("GET", "/sandboxes/sb-1")
    assert str(caught.value) == message


@pytest.mark.asyncio
async def test_redirects_are_connection_failures(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A 3xx is never followed (the key must not travel elsewhere)."""

    async def handler(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"/elsewhere?key={SECRET}")

    scripted.handler = handler
    with pytest.raises(CreateosError) as caught:
        await client.request_json("GET", "/sandboxes/sb-1")
    assert str(caught.value) == "CreateOS connection failed."
    assert type(caught.value) is ConnectionFailedError
    assert scripted.requests() == ["GET /v1/sandboxes/sb-1"]


@pytest.mark.asyncio
async def test_refused_connection_hides_the_url(scripted: ScriptedApi) -> None:
    """Transport errors become one fixed message without the cause (it holds the URL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    pool = HttpPool(clock_transport(scripted.clock))
    client = CreateosClient(
        http=pool.get(url),
        api_url=url,
        api_key=SECRET,
        timeout_ms=5000,
        clock=scripted.clock,
        pacer=Pacer.disabled(),
    )
    with pytest.raises(CreateosError) as caught:
        await client.request_json("GET", "/sandboxes/sb-1")
    await pool.aclose()
    assert str(caught.value) == "CreateOS connection failed."
    assert type(caught.value) is ConnectionFailedError
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


@pytest.mark.asyncio
async def test_default_deadline_runs_on_the_injected_clock(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """Without a caller signal a request gets ``timeout_ms`` on the clock, not wall time."""

    async def handler(request: web.Request) -> web.Response:
        await scripted.clock.sleep(3600)
        return success({})

    scripted.handler = handler
    started = time.perf_counter()
    with pytest.raises(OperationTimeout):
        await client.request_json("GET", "/sandboxes/sb-1")
    assert scripted.clock.now() == pytest.approx(5.0)
    assert time.perf_counter() - started < 2


@pytest.mark.asyncio
async def test_caller_abort_raises_its_reason(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A host cancellation while waiting for an answer surfaces as the cancellation reason."""
    controller = AbortController()

    async def handler(request: web.Request) -> web.Response:
        controller.abort()
        await scripted.clock.sleep(3600)
        return success({})

    scripted.handler = handler
    with pytest.raises(OperationCancelled) as caught:
        await client.request_json("GET", "/sandboxes/sb-1", signal=controller.signal)
    assert str(caught.value) == "CreateOS operation was cancelled."
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_file_paths_are_percent_encoded_like_encode_uri_component(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """``/`` and every reserved character are escaped; the bytes go raw."""

    async def handler(request: web.Request) -> web.Response:
        return success({})

    scripted.handler = handler
    await client.upload("sb-1", "/paperclip-workspace/a b/ü?&#%!*'().txt", b"\x00\xff")
    (call,) = scripted.calls
    assert call.path == (
        "/v1/sandboxes/sb-1/files?path=%2Fpaperclip-workspace%2Fa%20b%2F%C3%BC%3F%26%23%25!*'().txt"
    )
    assert call.headers["Content-Type"] == "application/octet-stream"
    assert call.body == b"\x00\xff"


@pytest.mark.asyncio
async def test_invalid_ids_are_refused_before_any_request(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A lease id from storage never reaches a URL unless it is a safe identifier."""
    with pytest.raises(CreateosError) as caught:
        await client.delete_sandbox("../../admin")
    assert str(caught.value) == "CreateOS returned an invalid resource ID."
    assert scripted.calls == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"id": "sb-2", "status": "running"}, "CreateOS sandbox identity or state is invalid."),
        ({"id": "sb-1", "status": 3}, "CreateOS sandbox identity or state is invalid."),
        ({"id": "sb-1"}, "CreateOS sandbox identity or state is invalid."),
    ],
)
async def test_sandbox_reads_are_validated(
    scripted: ScriptedApi, client: CreateosClient, data: dict[str, object], message: str
) -> None:
    """A read must describe the sandbox asked for, with a string status."""

    async def handler(request: web.Request) -> web.Response:
        return success(data)

    scripted.handler = handler
    with pytest.raises(CreateosError) as caught:
        await client.get_sandbox("sb-1", signal=AbortController().signal)
    assert str(caught.value) == message


@pytest.mark.asyncio
async def test_created_sandbox_id_is_validated(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """An unsafe id from the API is refused; the create body never asks for ingress."""

    async def handler(request: web.Request) -> web.Response:
        return success({"id": "sb 1/.."})

    scripted.handler = handler
    with pytest.raises(CreateosError) as caught:
        await client.create_sandbox(
            shape="s", rootfs=None, region="eu", signal=AbortController().signal
        )
    assert str(caught.value) == "CreateOS returned an invalid resource ID."
    assert scripted.calls[0].json() == {"shape": "s", "region": "eu", "ingress_enabled": False}


@pytest.mark.asyncio
async def test_delete_of_a_missing_sandbox_is_success(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """404 on DELETE means already gone; other failures propagate."""
    statuses = iter([404, 500])

    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"status": "fail", "data": {}}, status=next(statuses))

    scripted.handler = handler
    await client.delete_sandbox("sb-1")
    with pytest.raises(CreateosApiError) as caught:
        await client.delete_sandbox("sb-1")
    assert caught.value.status == 500


@pytest.mark.asyncio
async def test_stream_decodes_utf8_split_across_chunks(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A multi-byte character cut between two network chunks arrives whole."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        await response.write(b'{"x": "\xe2\x82')
        await asyncio.sleep(0)
        await response.write(b'\xac"}\n')
        return response

    scripted.handler = handler
    async with client.stream(
        "GET", "/sandboxes/sb-1/processes/p-1/connect?after=0", signal=AbortController().signal
    ) as chunks:
        text = "".join([chunk async for chunk in chunks])
    assert text == '{"x": "€"}\n'


@pytest.mark.asyncio
async def test_stream_error_status_raises_before_reading(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A 410 on connect is an API error with the output-connection label."""

    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"status": "fail", "data": {}}, status=410)

    scripted.handler = handler
    with pytest.raises(CreateosApiError) as caught:
        async with client.stream(
            "GET", "/sandboxes/sb-1/processes/p-1/connect?after=3", signal=AbortController().signal
        ):
            raise AssertionError("must not yield")
    assert str(caught.value) == "CreateOS request failed (HTTP 410) during output connection."


@pytest.mark.asyncio
async def test_stream_cut_mid_body_is_a_stream_read_error(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A connection dropped mid-stream is distinguishable so the follower can reconnect."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(b'{"type":"heartbeat"}\n')
        assert request.transport is not None
        request.transport.close()
        return response

    scripted.handler = handler
    received: list[str] = []

    async def follow() -> None:
        async with client.stream(
            "GET", "/sandboxes/sb-1/processes/p-1/connect?after=0", signal=AbortController().signal
        ) as chunks:
            async for chunk in chunks:
                received.append(chunk)

    with pytest.raises(StreamReadError) as caught:
        await follow()
    assert received == ['{"type":"heartbeat"}\n']
    assert str(caught.value) == "CreateOS connection failed."


@pytest.mark.asyncio
async def test_download_streams_raw_bytes(scripted: ScriptedApi, client: CreateosClient) -> None:
    """File downloads are raw bytes, not an envelope."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b"\x00binary\xff" * 1000)

    scripted.handler = handler
    async with client.download("sb-1", "/tmp/x") as chunks:
        data = b"".join([chunk async for chunk in chunks])
    assert data == b"\x00binary\xff" * 1000


@pytest.mark.asyncio
async def test_download_without_body(scripted: ScriptedApi, client: CreateosClient) -> None:
    """A bodiless success cannot be a file."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=204)

    scripted.handler = handler
    with pytest.raises(CreateosError) as caught:
        async with client.download("sb-1", "/tmp/x"):
            raise AssertionError("must not yield")
    assert str(caught.value) == "CreateOS file download has no body."


@pytest.mark.asyncio
async def test_process_stream_without_body(scripted: ScriptedApi, client: CreateosClient) -> None:
    """A bodiless /connect success is the spec's empty-stream error, not a silent end."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=204)

    scripted.handler = handler
    with pytest.raises(CreateosError) as caught:
        async with client.stream("GET", "/sandboxes/sb-1/processes/p-1/connect?after=0"):
            raise AssertionError("must not yield")
    assert str(caught.value) == "CreateOS returned an empty process stream."


def test_environment_repr_never_shows_the_api_key() -> None:
    """pytest prints fixture values in tracebacks: the key must not be among them."""
    env = Environment(
        company_id="c", environment_id="e", config={"apiKey": "cos-secret", "shape": "s"}
    )
    text = repr(env)
    assert "cos-secret" not in text
    assert text == (
        "Environment(company_id='c', environment_id='e', "
        "config={'apiKey': '<redacted>', 'shape': 's'})"
    )


@pytest.mark.asyncio
async def test_pool_keeps_one_http_client_per_api_url() -> None:
    """Connections and the SSL context are reused; shutdown closes the clients."""
    pool = HttpPool()
    first = pool.get("https://a.test")
    assert pool.get("https://a.test") is first
    assert pool.get("https://b.test") is not first
    assert _ssl_context() is _ssl_context()
    await pool.aclose()
    assert first.is_closed


def test_plain_http_skips_the_ca_bundle_and_https_verifies() -> None:
    """Loading the CA bundle costs tens of milliseconds a process: only TLS needs it."""
    plain, verified = _ssl_context(tls=False), _ssl_context()
    assert plain is _ssl_context(tls=False)
    assert plain.cert_store_stats()["x509_ca"] == 0
    assert verified.cert_store_stats()["x509_ca"] > 0
    assert verified.verify_mode == ssl.CERT_REQUIRED
    assert verified.check_hostname


@pytest.mark.asyncio
async def test_new_provider_and_first_request_are_cheap(scripted: ScriptedApi) -> None:
    """After the first provider in a process, construction plus a request costs < 5 ms."""

    async def handler(request: web.Request) -> web.Response:
        return success({"id": "sb-1"})

    scripted.handler = handler
    env = Environment(
        company_id="c",
        environment_id="e",
        config={"apiUrl": scripted.url, "shape": "s", "apiKey": "k"},
    )
    metadata = {
        "provider": "createos",
        "companyId": "c",
        "environmentId": "e",
        "apiUrl": scripted.url,
    }
    costs = []
    for _ in range(8):
        # CPU time of this process (client and in-loop server): wall time on a shared,
        # loaded machine measures the neighbours, not us.
        started = time.process_time()
        provider = CreateosProvider(clock=scripted.clock, pacer=Pacer.disabled())
        await provider.destroy_lease(env, "sb-1", metadata)
        costs.append(time.process_time() - started)
        await provider.shutdown()
    assert min(costs[1:]) < 0.005
    assert scripted.requests() == ["DELETE /v1/sandboxes/sb-1"] * 8


# -- abort signals (the client's cancellation primitive) ----------------------------------------


@pytest.mark.asyncio
async def test_deadline_close_stops_its_timer(scripted: ScriptedApi) -> None:
    """A closed deadline never fires and leaves no sleeper on the clock."""
    clock = scripted.clock
    with clock.busy(), deadline_signal(clock, 5) as signal:
        await asyncio.sleep(0)  # let the timer task start sleeping (busy: no jump meanwhile)
        assert clock.next_deadline() == pytest.approx(5)
    await asyncio.sleep(0)
    assert clock.next_deadline() is None
    await clock.sleep(10)
    assert not signal.aborted


@pytest.mark.asyncio
async def test_any_signal_takes_the_first_reason(scripted: ScriptedApi) -> None:
    """A combined signal aborts with whichever source fired first."""
    controller = AbortController()
    with (
        deadline_signal(scripted.clock, 1) as deadline,
        any_signal(controller.signal, deadline) as combined,
    ):
        await scripted.clock.sleep(2)
        controller.abort()
        assert isinstance(combined.reason, OperationTimeout)
    assert str(combined.reason) == "CreateOS operation timed out."


@pytest.mark.asyncio
async def test_run_on_an_aborted_signal_does_not_start_the_work() -> None:
    """An already-aborted signal raises at once; the coroutine is closed, not leaked."""
    controller = AbortController()
    controller.abort(OperationTimeout())
    started = []

    async def work() -> None:
        started.append(True)

    with pytest.raises(OperationTimeout):
        await controller.signal.run(work())
    assert started == []


@pytest.mark.asyncio
async def test_outside_cancellation_is_not_swallowed(scripted: ScriptedApi) -> None:
    """Cancelling the caller's task still cancels it, even inside a signal scope."""
    controller = AbortController()

    async def waiter() -> None:
        await controller.signal.sleep(scripted.clock, 100)

    task = asyncio.ensure_future(waiter())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.asyncio
async def test_abort_interrupts_sleep_with_its_reason(scripted: ScriptedApi) -> None:
    """An abort while sleeping raises the reason at that moment of clock time."""
    controller = AbortController()

    async def abort_at_one() -> None:
        await scripted.clock.sleep(1)
        controller.abort()

    with scripted.clock.busy():
        aborter = asyncio.ensure_future(abort_at_one())
        await asyncio.sleep(0)  # the aborter sleeps on the clock before anyone can jump
    with pytest.raises(OperationCancelled):
        await controller.signal.sleep(scripted.clock, 100)
    await aborter
    assert scripted.clock.now() == pytest.approx(1)


def test_public_names_are_sorted_and_importable() -> None:
    """The curated namespace is the provider's whole contract."""
    import pytest_createos.provider as provider

    assert provider.__all__ == sorted(provider.__all__)
    for name in provider.__all__:
        assert getattr(provider, name) is not None
    assert {
        "CreateosProvider",
        "Environment",
        "Lease",
        "RealizedWorkspace",
        "ExecuteResult",
        "SyncOperation",
        "FileMapping",
        "PostUploadCommand",
        "SyncResult",
        "ProbeResult",
        "ConfigValidation",
        "CreateosError",
        "CreateosApiError",
        "CreateosCleanupError",
    } <= set(provider.__all__)


def test_pool_gives_each_event_loop_its_own_client() -> None:
    """A provider that outlives an event loop still works in the next one."""
    pool = HttpPool()

    async def use() -> object:
        return pool.get("https://a.test")

    first = asyncio.run(use())
    second = asyncio.run(use())
    assert first is not second
    asyncio.run(pool.aclose())


@pytest.mark.asyncio
async def test_provider_sends_through_an_injected_transport() -> None:
    """``transport=`` is httpx's seam: every request goes through it, key header included."""
    seen: list[tuple[str, str, str | None]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.headers.get("X-Api-Key")))
        return httpx.Response(503, json={"status": "error", "message": "down"})

    provider = CreateosProvider(
        pacer=Pacer.disabled(), environ={}, transport=httpx.MockTransport(answer)
    )
    env = Environment(
        company_id="c",
        environment_id="e",
        config={"apiUrl": "https://api.test", "apiKey": "cos-key", "shape": "s-1vcpu-1gb"},
    )
    with pytest.raises(CreateosApiError) as caught:
        await provider.acquire_lease(env, run_id="r1")
    assert str(caught.value) == "CreateOS request failed (HTTP 503) during sandbox lifecycle."
    assert seen == [("POST", "/v1/sandboxes", "cos-key")]
    await provider.shutdown()
