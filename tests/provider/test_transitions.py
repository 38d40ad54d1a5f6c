"""The transition algorithm (spec §2.3) against scripted state sequences over loopback HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import pytest
import pytest_asyncio
from aiohttp import web

from fake_server import clock_transport
from pytest_createos.provider import CreateosApiError, CreateosError, Pacer
from pytest_createos.provider._client import CreateosClient, HttpPool
from pytest_createos.provider._signal import OperationTimeout, deadline_signal
from pytest_createos.provider._transitions import transition
from tests.provider.conftest import success

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fake_server.clock import VirtualClock
    from tests.provider.conftest import ScriptedApi


@pytest_asyncio.fixture(name="client")
async def _client(scripted: ScriptedApi) -> AsyncIterator[CreateosClient]:
    pool = HttpPool(clock_transport(scripted.clock))
    yield CreateosClient(
        http=pool.get(scripted.url),
        api_url=scripted.url,
        api_key="k",
        timeout_ms=60_000,
        clock=scripted.clock,
        pacer=Pacer.disabled(),
    )
    await pool.aclose()


def script(api: ScriptedApi, reads: list[str], posts: list[int] | None = None) -> None:
    """GETs answer the next status in ``reads``; POSTs answer the next status in ``posts``."""
    statuses = iter(reads)
    answers = iter(posts or [])

    async def handler(request: web.Request) -> web.Response:
        if request.method == "GET":
            return success({"id": "sb-1", "status": next(statuses)})
        status = next(answers, 202)
        if status >= 300:
            return web.json_response({"status": "fail", "data": {}}, status=status)
        return success({"id": "sb-1"}, status=status)

    api.handler = handler


async def drive(client: CreateosClient, desired: str, seconds: float = 60) -> None:
    # Busy like the provider's facade: the clock may only jump while the loop waits.
    clock = cast("VirtualClock", client.clock)
    with clock.busy(), deadline_signal(clock, seconds) as signal:
        await transition(client, "sb-1", desired, signal)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_resume_reads_source_state_after_submit_and_keeps_polling(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """paused, paused, resuming, running → exactly 4 GETs and 1 POST, 250 ms apart."""
    script(scripted, ["paused", "paused", "resuming", "running"])
    await drive(client, "running")
    assert scripted.requests() == [
        "GET /v1/sandboxes/sb-1",
        "POST /v1/sandboxes/sb-1/resume",
        "GET /v1/sandboxes/sb-1",
        "GET /v1/sandboxes/sb-1",
        "GET /v1/sandboxes/sb-1",
    ]
    assert scripted.clock.now() == pytest.approx(0.75)


@pytest.mark.asyncio
async def test_already_there_sends_no_request_to_change(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A sandbox already in the desired state costs one read."""
    script(scripted, ["paused"])
    await drive(client, "paused")
    assert scripted.requests() == ["GET /v1/sandboxes/sb-1"]


@pytest.mark.asyncio
async def test_conflict_is_reconciled_by_reading_again(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A 409 is swallowed and, while still submittable, the change is requested again."""
    script(scripted, ["running", "running", "pausing", "paused"], posts=[409, 202])
    await drive(client, "paused")
    assert scripted.requests() == [
        "GET /v1/sandboxes/sb-1",
        "POST /v1/sandboxes/sb-1/pause",
        "GET /v1/sandboxes/sb-1",
        "POST /v1/sandboxes/sb-1/pause",
        "GET /v1/sandboxes/sb-1",
        "GET /v1/sandboxes/sb-1",
    ]


@pytest.mark.asyncio
async def test_error_state_is_resumable(scripted: ScriptedApi, client: CreateosClient) -> None:
    """``error`` (exhausted server retries) may be resumed; ``creating`` is waited out."""
    script(scripted, ["creating", "error", "resuming", "running"])
    await drive(client, "running")
    assert scripted.requests().count("POST /v1/sandboxes/sb-1/resume") == 1


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("desired", "status"),
    [
        ("running", "destroying"),
        ("running", "destroyed"),
        ("running", "failed"),
        ("running", "forking"),
        ("running", "sleeping"),
        ("paused", "error"),
        ("paused", "destroying"),
    ],
)
async def test_states_that_cannot_lead_there_fail_fast(
    scripted: ScriptedApi, client: CreateosClient, desired: str, status: str
) -> None:
    """Terminal or foreign states end the wait at once with a fixed message."""
    script(scripted, [status])
    with pytest.raises(CreateosError) as caught:
        await drive(client, desired)
    assert str(caught.value) == f"CreateOS sandbox did not reach {desired}."
    assert len(scripted.calls) == 1


@pytest.mark.asyncio
async def test_other_submit_errors_propagate(scripted: ScriptedApi, client: CreateosClient) -> None:
    """Only 409 is reconciled; a 402 (out of credit) is the caller's error."""
    script(scripted, ["paused"], posts=[402])
    with pytest.raises(CreateosApiError) as caught:
        await drive(client, "running")
    assert caught.value.status == 402


@pytest.mark.asyncio
async def test_polling_is_bounded_only_by_the_callers_deadline(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    """A sandbox stuck in ``pausing`` is polled until the shared deadline fires."""
    script(scripted, ["pausing"] * 100)
    with pytest.raises(OperationTimeout):
        await drive(client, "paused", seconds=2)
    assert len(scripted.calls) == 8
    assert scripted.clock.now() == pytest.approx(2.0)
