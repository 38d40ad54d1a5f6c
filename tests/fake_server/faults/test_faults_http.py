"""Faults over real loopback HTTP: envelopes, transport failures, lost replies, out-of-band changes.

Every test checks what an httpx client (the provider's transport) actually sees, and that the
fake itself stayed healthy: no recorded errors and the next request on the same client works.
"""

from __future__ import annotations

import time

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, tls_context
from fake_server.faults import (
    EmptyReply,
    Fault,
    Faults,
    Forget,
    HttpError,
    Latency,
    LostReply,
    ResetAfterHeaders,
    ResetBeforeResponse,
    SetStatus,
    TamperFile,
    UnknownTargetError,
)


async def running_sandbox(api: httpx.AsyncClient) -> str:
    response = await api.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    assert response.status_code == 200, response.text
    sandbox_id: str = response.json()["data"]["id"]
    assert (await api.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]["status"] == "running"
    return sandbox_id


async def status_of(api: httpx.AsyncClient, sandbox_id: str) -> str:
    response = await api.get(f"/v1/sandboxes/{sandbox_id}")
    assert response.status_code == 200, response.text
    status: str = response.json()["data"]["status"]
    return status


@pytest.mark.asyncio
async def test_an_injected_5xx_has_the_error_envelope_and_fires_once(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient
) -> None:
    sandbox_id = await running_sandbox(api)
    fault = faults.add(Fault("pause_sandbox", HttpError(503)))
    response = await api.post(f"/v1/sandboxes/{sandbox_id}/pause")
    assert response.status_code == 503
    assert response.json() == {
        "status": "error",
        "code": 503,
        "message": "service unavailable",
        "data": {"code": "service_unavailable"},
    }
    assert await status_of(api, sandbox_id) == "running"  # the operation never ran
    assert (await api.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    assert faults.fire_count(fault) == 1
    assert faults.unfired() == []
    [event] = faulty.journal.filter(kind="fault")
    assert (event.operation, event.sandbox_id) == ("pause_sandbox", sandbox_id)
    assert event.detail.startswith("fault#1 HttpError(status=503")


@pytest.mark.asyncio
async def test_an_injected_429_carries_retry_after_and_the_fail_envelope(
    faults: Faults, api: httpx.AsyncClient
) -> None:
    sandbox_id = await running_sandbox(api)
    faults.add(Fault("get_sandbox", HttpError(429, retry_after=2), times=2))
    for _ in range(2):
        response = await api.get(f"/v1/sandboxes/{sandbox_id}")
        assert response.status_code == 429
        assert response.headers["Retry-After"] == "2"
        assert response.json() == {
            "status": "fail",
            "data": {"code": "rate_limited", "message": "too many requests"},
        }
    assert (await api.get(f"/v1/sandboxes/{sandbox_id}")).status_code == 200


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        (404, "sandbox_not_found", "gone for good"),
        (409, "conflict", "conflict"),
        (410, "output_offset_expired", "gone"),
        (502, "bad_gateway", "bad gateway"),
    ],
)
async def test_any_status_can_be_injected_with_its_envelope(
    faults: Faults, api: httpx.AsyncClient, status: int, code: str, message: str
) -> None:
    custom = code == "sandbox_not_found"
    action = HttpError(status, code=code, message=message) if custom else HttpError(status)
    faults.add(Fault("whoami", action))
    response = await api.get("/v1/whoami")
    assert response.status_code == status
    body = response.json()
    if status >= 500:
        assert body == {
            "status": "error",
            "code": status,
            "message": message,
            "data": {"code": code},
        }
    else:
        assert body == {"status": "fail", "data": {"code": code, "message": message}}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("action", "error"),
    [
        (ResetBeforeResponse(), httpx.ReadError),
        (EmptyReply(), httpx.RemoteProtocolError),
        (ResetAfterHeaders(), httpx.RemoteProtocolError),
    ],
)
async def test_transport_faults_raise_httpx_transport_errors_and_the_fake_stays_up(
    faulty: FakeCreateOS,
    faults: Faults,
    api: httpx.AsyncClient,
    action: ResetBeforeResponse | EmptyReply | ResetAfterHeaders,
    error: type[Exception],
) -> None:
    sandbox_id = await running_sandbox(api)
    faults.add(Fault("get_sandbox", action))
    with pytest.raises(error):
        await api.get(f"/v1/sandboxes/{sandbox_id}")
    assert await status_of(api, sandbox_id) == "running"
    assert faulty.errors == []


@pytest.mark.asyncio
async def test_reset_after_headers_delivers_the_status_then_fails_the_body(
    faults: Faults, api: httpx.AsyncClient
) -> None:
    faults.add(Fault("whoami", ResetAfterHeaders(status=200)))
    async with api.stream("GET", "/v1/whoami") as response:
        assert response.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError):
            await response.aread()


@pytest.mark.asyncio
async def test_reset_after_headers_by_default_commits_and_sends_the_real_status(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient
) -> None:
    sandbox_id = await running_sandbox(api)
    faults.add(Fault("upload_file", ResetAfterHeaders()))
    url = f"/v1/sandboxes/{sandbox_id}/files"
    async with api.stream("PUT", url, params={"path": "/tmp/m"}, content=b"marker") as response:
        assert response.status_code == 200  # a client that skips the body sees success
        with pytest.raises(httpx.RemoteProtocolError):
            await response.aread()
    assert faulty.sandbox(sandbox_id).disk.read_file("/tmp/m") == b"marker"
    faults.add(Fault("get_sandbox", ResetAfterHeaders(status=503)))
    async with api.stream("GET", f"/v1/sandboxes/{sandbox_id}") as response:
        assert response.status_code == 503
        with pytest.raises(httpx.RemoteProtocolError):
            await response.aread()


@pytest.mark.asyncio
async def test_a_lost_create_reply_leaves_a_sandbox_the_client_never_heard_of(
    faults: Faults, api: httpx.AsyncClient
) -> None:
    faults.add(Fault("create_sandbox", LostReply()))
    with pytest.raises(httpx.RemoteProtocolError):
        await api.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    listing = (await api.get("/v1/sandboxes")).json()["data"]
    assert listing["pagination"]["total"] == 1
    assert listing["data"][0]["status"] in ("creating", "running")


@pytest.mark.asyncio
async def test_a_lost_pause_reply_still_pauses(faults: Faults, api: httpx.AsyncClient) -> None:
    sandbox_id = await running_sandbox(api)
    faults.add(Fault("pause_sandbox", LostReply()))
    with pytest.raises(httpx.RemoteProtocolError):
        await api.post(f"/v1/sandboxes/{sandbox_id}/pause")
    assert await status_of(api, sandbox_id) in ("pausing", "paused")
    assert await status_of(api, sandbox_id) == "paused"


@pytest.mark.asyncio
async def test_a_lost_streamed_exec_reply_still_runs_the_command(
    faults: Faults, api: httpx.AsyncClient
) -> None:
    sandbox_id = await running_sandbox(api)
    faults.add(Fault("exec_stream", LostReply()))
    body = {"cmd": "/bin/bash", "args": ["-lc", "echo ran > /tmp/proof"]}
    with pytest.raises(httpx.RemoteProtocolError):
        await api.post(f"/v1/sandboxes/{sandbox_id}/exec?stream=true", json=body)
    proof = await api.get(f"/v1/sandboxes/{sandbox_id}/files", params={"path": "/tmp/proof"})
    assert proof.content == b"ran\n"


@pytest.mark.asyncio
async def test_latency_runs_on_the_fake_clock(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient
) -> None:
    faults.add(Fault("whoami", Latency(30)))
    before = faulty.clock.now()
    started = time.perf_counter()
    assert (await api.get("/v1/whoami")).status_code == 200
    assert faulty.clock.now() >= before + 30
    assert time.perf_counter() - started < 5  # thirty fake seconds cost no real time


@pytest.mark.asyncio
async def test_out_of_band_status_changes_at_the_moment_of_the_call(
    faults: Faults, api: httpx.AsyncClient
) -> None:
    sandbox_id = await running_sandbox(api)
    faults.add(Fault("get_sandbox", SetStatus("failed"), sandbox_id=sandbox_id))
    assert await status_of(api, sandbox_id) == "failed"
    other = await running_sandbox(api)
    faults.add(Fault("resume_sandbox", Forget()))
    response = await api.post(f"/v1/sandboxes/{other}/resume")
    assert response.status_code == 404
    assert (await api.get(f"/v1/sandboxes/{other}")).status_code == 404


@pytest.mark.asyncio
async def test_a_tampered_marker_is_what_the_next_read_sees(
    faults: Faults, api: httpx.AsyncClient
) -> None:
    sandbox_id = await running_sandbox(api)
    marker = "/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease"
    put = await api.put(f"/v1/sandboxes/{sandbox_id}/files", params={"path": marker}, content=b"m1")
    assert put.status_code == 200
    faults.add(Fault("exec", TamperFile(marker, b"someone-else")))
    result = await api.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "/bin/cat", "args": [marker]}
    )
    assert result.json()["data"]["result"]["stdout"] == "someone-else"


@pytest.mark.asyncio
async def test_direct_out_of_band_changes_need_no_request(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient
) -> None:
    sandbox_id = await running_sandbox(api)
    faults.set_status(sandbox_id, "error")
    assert await status_of(api, sandbox_id) == "error"
    faults.tamper_file(sandbox_id, "/tmp/t", b"x")
    assert faulty.sandbox(sandbox_id).disk.read_file("/tmp/t") == b"x"
    faults.forget(sandbox_id)
    assert (await api.get(f"/v1/sandboxes/{sandbox_id}")).status_code == 404
    with pytest.raises(UnknownTargetError):
        faults.set_status(sandbox_id, "failed")


@pytest.mark.asyncio
async def test_faults_narrowed_to_a_sandbox_leave_others_alone(
    faults: Faults, api: httpx.AsyncClient
) -> None:
    first, second = await running_sandbox(api), await running_sandbox(api)
    faults.add(Fault("get_sandbox", HttpError(500), sandbox_id=second, times=None))
    assert (await api.get(f"/v1/sandboxes/{first}")).status_code == 200
    assert (await api.get(f"/v1/sandboxes/{second}")).status_code == 500
    assert (await api.get(f"/v1/sandboxes/{second}")).status_code == 500


@pytest.mark.asyncio
async def test_star_faults_never_touch_the_control_api(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient
) -> None:
    faults.add(Fault("*", HttpError(503), times=None))
    assert (await api.get("/_fake/faults")).status_code == 200
    assert (await api.get("/v1/whoami")).status_code == 503


@pytest.mark.asyncio
async def test_a_lost_reply_is_lost_even_when_the_operation_fails(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient
) -> None:
    faults.add(Fault("create_sandbox", LostReply()))
    with pytest.raises(httpx.RemoteProtocolError):
        await api.post("/v1/sandboxes", json={"shape": "no-such-shape"})
    [response] = faulty.journal.responses("create_sandbox")
    assert response.status == 400  # the journal still says what the fake answered


@pytest.mark.asyncio
async def test_unknown_routes_can_be_faulted_too(faults: Faults, api: httpx.AsyncClient) -> None:
    faults.add(Fault("not_implemented", HttpError(503)))
    assert (await api.get("/v1/volumes")).status_code == 503
    assert (await api.get("/v1/volumes")).status_code == 501


def test_direct_changes_from_a_sync_test_reach_a_threaded_fake() -> None:
    """Thread mode: the change runs on the fake's loop and is done when the call returns."""
    with FakeCreateOS(transitions=TransitionPolicy.immediate()) as fake:
        with httpx.Client(
            verify=tls_context(),
            base_url=fake.url + "/v1",
            headers={"X-Api-Key": fake.api_key},
            timeout=10,
        ) as api:
            sandbox_id = api.post("/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()["data"]["id"]
            api.get(f"/sandboxes/{sandbox_id}")
            body = {"cmd": "/bin/bash", "args": ["-c", "sleep 1000"]}
            # A sync client's gaps are invisible to the clock: hold it, or `sleep 1000` may end
            # (fake time jumping) before the crash reaches it on a loaded machine.
            with fake.clock.hold():
                created = api.post(f"/sandboxes/{sandbox_id}/processes", json=body)
                process_id = created.json()["data"]["process_id"]
                fake.faults.crash_process(sandbox_id, process_id, "SIGKILL")
            process = api.get(f"/sandboxes/{sandbox_id}/processes/{process_id}").json()["data"]
            assert (process["tree_exited"], process["signal"]) == (True, "SIGKILL")
            fake.faults.set_status(sandbox_id, "failed")
            assert api.get(f"/sandboxes/{sandbox_id}").json()["data"]["status"] == "failed"
        assert fake.errors == []


@pytest.mark.asyncio
async def test_a_new_route_can_be_faulted(faults: Faults, api: httpx.AsyncClient) -> None:
    sandbox_id = await running_sandbox(api)
    faults.add(Fault("get_bandwidth", HttpError(503)))
    assert (await api.get(f"/v1/sandboxes/{sandbox_id}/bandwidth")).status_code == 503
    assert (await api.get(f"/v1/sandboxes/{sandbox_id}/bandwidth")).status_code == 200
