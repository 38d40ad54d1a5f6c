"""Stream faults on NDJSON (/connect, streamed exec) and file downloads, over loopback HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio

from fake_server import tls_context
from fake_server.faults import (
    CrashProcess,
    CutStream,
    DuplicateFrame,
    EvictOutput,
    ExitWithoutStatus,
    Fault,
    Faults,
    LostReply,
    MalformedFrame,
    ResetAfterHeaders,
    SkipFrame,
    StallStream,
    TruncatedDownload,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio

THREE_LINES = "echo one; sleep 1; echo two; sleep 1; echo three"


@pytest_asyncio.fixture(name="api")
async def _api(faulty: FakeCreateOS) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        verify=tls_context(),
        base_url=faulty.url + "/v1",
        headers={"X-Api-Key": faulty.api_key},
        timeout=10,
    ) as client:
        yield client


@pytest_asyncio.fixture(name="sandbox")
async def _sandbox(api: httpx.AsyncClient) -> str:
    sandbox_id: str = (await api.post("/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()["data"][
        "id"
    ]
    assert (await api.get(f"/sandboxes/{sandbox_id}")).json()["data"]["status"] == "running"
    return sandbox_id


async def finished_process(api: httpx.AsyncClient, sandbox: str, script: str) -> str:
    """Start ``script``, close its stdin and wait until its tree exited; returns its id."""
    body = {"cmd": "/bin/bash", "args": ["-c", script]}
    created = await api.post(f"/sandboxes/{sandbox}/processes", json=body)
    assert created.status_code == 201, created.text
    process_id: str = created.json()["data"]["process_id"]
    await api.post(f"/sandboxes/{sandbox}/processes/{process_id}/stdin/close")
    waited = await api.get(
        f"/sandboxes/{sandbox}/processes/{process_id}/wait",
        params={"scope": "tree", "timeout_ms": 60000},
    )
    assert waited.status_code == 200, waited.text
    return process_id


def data(seq: int, text: str) -> dict[str, Any]:
    encoded = base64.b64encode(text.encode()).decode()
    return {"type": "data", "seq": seq, "stream": "stdout", "data_base64": encoded}


ALL = [data(1, "one\n"), data(2, "two\n"), data(3, "three\n"), {"type": "exit", "exit_code": 0}]


async def connect(api: httpx.AsyncClient, sandbox: str, process: str, after: int = 0) -> str:
    response = await api.get(
        f"/sandboxes/{sandbox}/processes/{process}/connect", params={"after": after}
    )
    assert response.status_code == 200, response.text
    return response.text


def parse(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line]


async def read_until_failure(
    api: httpx.AsyncClient, method: str, url: str, **kwargs: Any
) -> tuple[bytes, type[Exception], httpx.Headers]:
    """Read a streamed body until the transport fails; returns bytes, error type, headers."""
    received = b""
    headers = httpx.Headers()
    try:
        async with api.stream(method, url, **kwargs) as response:
            assert response.status_code == 200
            headers = response.headers
            async for chunk in response.aiter_raw():
                received += chunk
    except httpx.TransportError as exc:
        return received, type(exc), headers
    raise AssertionError(f"the stream did not fail; got {received!r}")


def connect_url(sandbox: str, process: str) -> str:
    return f"/sandboxes/{sandbox}/processes/{process}/connect?after=0"


async def test_the_unfaulted_stream_is_the_baseline(api: httpx.AsyncClient, sandbox: str) -> None:
    process = await finished_process(api, sandbox, THREE_LINES)
    assert parse(await connect(api, sandbox, process)) == ALL


async def test_a_cut_after_frames_drops_the_connection_and_replay_resumes(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    process = await finished_process(api, sandbox, THREE_LINES)
    faults.add(Fault("connect_process", CutStream(after_frames=2)))
    received, error, _ = await read_until_failure(api, "GET", connect_url(sandbox, process))
    assert error is httpx.RemoteProtocolError
    assert parse(received.decode()) == ALL[:2]
    # The handler finished before the drop, so the journal always has its response.
    assert [e.status for e in faulty.journal.responses("connect_process")] == [200]
    assert parse(await connect(api, sandbox, process, after=2)) == ALL[2:]


async def test_a_clean_cut_ends_the_body_without_an_exit_frame(
    faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    process = await finished_process(api, sandbox, THREE_LINES)
    faults.add(Fault("connect_process", CutStream(after_frames=1, mode="eof")))
    assert parse(await connect(api, sandbox, process)) == ALL[:1]
    assert parse(await connect(api, sandbox, process)) == ALL  # keep-alive connection reused


async def test_a_cut_after_bytes_splits_a_line(
    faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    process = await finished_process(api, sandbox, THREE_LINES)
    faults.add(Fault("connect_process", CutStream(after_bytes=10)))
    received, error, _ = await read_until_failure(api, "GET", connect_url(sandbox, process))
    assert error is httpx.RemoteProtocolError
    assert received == b'{"type":"d'


async def test_malformed_skipped_duplicated_and_statusless_frames(
    faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    process = await finished_process(api, sandbox, THREE_LINES)
    faults.add(Fault("connect_process", MalformedFrame(after_frames=1, line="{oops")))
    lines = (await connect(api, sandbox, process)).splitlines()
    assert lines[1] == "{oops"
    assert [json.loads(line) for line in lines[:1] + lines[2:]] == ALL

    faults.add(Fault("connect_process", SkipFrame(2)))
    assert parse(await connect(api, sandbox, process)) == [ALL[0], ALL[2], ALL[3]]

    faults.add(Fault("connect_process", DuplicateFrame(1)))
    assert parse(await connect(api, sandbox, process)) == [ALL[0], *ALL]

    faults.add(Fault("connect_process", ExitWithoutStatus()))
    assert parse(await connect(api, sandbox, process)) == [*ALL[:3], {"type": "exit"}]


async def test_a_timed_stall_holds_the_stream_on_the_fake_clock(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    process = await finished_process(api, sandbox, THREE_LINES)
    faults.add(Fault("connect_process", StallStream(after_frames=1, seconds=120)))
    before = faulty.clock.now()
    assert parse(await connect(api, sandbox, process)) == ALL
    assert faulty.clock.now() >= before + 120


async def test_a_stall_forever_ends_when_the_client_gives_up(
    faulty: FakeCreateOS, faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    process = await finished_process(api, sandbox, THREE_LINES)
    faults.add(Fault("connect_process", StallStream(after_frames=1)))
    read = asyncio.create_task(connect(api, sandbox, process))
    await faulty.clock.sleep(600)  # the client's own deadline, on the fake clock
    assert not read.done()
    read.cancel()
    with pytest.raises(asyncio.CancelledError):
        await read
    assert parse(await connect(api, sandbox, process)) == ALL


async def test_a_streamed_exec_can_be_cut(
    faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    faults.add(Fault("exec_stream", CutStream(after_frames=1)))
    body = {"cmd": "/bin/bash", "args": ["-c", "echo a; sleep 1; echo b"]}
    url = f"/sandboxes/{sandbox}/exec?stream=true"
    received, error, _ = await read_until_failure(api, "POST", url, json=body)
    assert error is httpx.RemoteProtocolError
    assert parse(received.decode()) == [{"stdout": "a\n"}]


@pytest.mark.parametrize("action", [TruncatedDownload(10), CutStream(after_bytes=10)])
async def test_a_truncated_download_fails_after_the_given_bytes(
    faults: Faults,
    api: httpx.AsyncClient,
    sandbox: str,
    action: TruncatedDownload | CutStream,
) -> None:
    payload = bytes(range(100))
    await api.put(f"/sandboxes/{sandbox}/files", params={"path": "/tmp/f"}, content=payload)
    faults.add(Fault("download_file", action))
    url = f"/sandboxes/{sandbox}/files?path=/tmp/f"
    received, error, headers = await read_until_failure(api, "GET", url)
    assert error is httpx.RemoteProtocolError
    assert headers["Content-Length"] == "100"
    assert received == payload[:10]


async def test_evicted_output_answers_410(
    faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    process = await finished_process(api, sandbox, THREE_LINES)
    faults.add(Fault("connect_process", EvictOutput()))
    response = await api.get(
        f"/sandboxes/{sandbox}/processes/{process}/connect", params={"after": 0}
    )
    assert response.status_code == 410
    assert response.json()["status"] == "fail"


async def test_a_crash_ends_the_process_with_a_signal(
    faults: Faults, api: httpx.AsyncClient, sandbox: str
) -> None:
    body = {"cmd": "/bin/bash", "args": ["-c", "echo up; sleep 1000"]}
    created = await api.post(f"/sandboxes/{sandbox}/processes", json=body)
    process = created.json()["data"]["process_id"]
    await api.post(f"/sandboxes/{sandbox}/processes/{process}/stdin/close")
    faults.add(Fault("connect_process", CrashProcess("SIGKILL"), process_id=process))
    frames = parse(await connect(api, sandbox, process))
    assert frames[-1] == {"type": "exit", "signal": "SIGKILL"}


@pytest.mark.parametrize("action", [ResetAfterHeaders(), LostReply()])
async def test_a_streamed_reply_dropped_after_its_headers_sends_no_body_at_all(
    faults: Faults,
    api: httpx.AsyncClient,
    sandbox: str,
    action: ResetAfterHeaders | LostReply,
) -> None:
    payload = b"payload 242\n"
    await api.put(f"/sandboxes/{sandbox}/files", params={"path": "/tmp/f"}, content=payload)
    faults.add(Fault("download_file", action))
    url = f"/sandboxes/{sandbox}/files?path=/tmp/f"
    received, error, headers = await read_until_failure(api, "GET", url)
    assert error is httpx.RemoteProtocolError
    assert headers["Content-Length"] == str(len(payload))
    assert received == b""  # not a byte, and certainly not a second status line
