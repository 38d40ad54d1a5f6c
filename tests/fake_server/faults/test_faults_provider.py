"""The provider's guarantees under specific faults: one scenario per guarantee, deterministic.

These are the cases the chaos test samples at random, pinned down with exact messages: an
ambiguous process creation, a transient error during resume, a tampered marker, a failed
sandbox, a cut or corrupted output stream, rate limiting on reconnect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from fake_server.faults import (
    CutStream,
    Fault,
    HttpError,
    LostReply,
    SetStatus,
    SkipFrame,
)
from pytest_createos.provider import (
    CreateosApiError,
    CreateosCleanupError,
    CreateosError,
    CreateosProvider,
    Environment,
    Lease,
    Pacer,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio

MARKER_PATH = "/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease"
SECRET = "secret-response-body"


@pytest_asyncio.fixture(name="fake")
async def _fake() -> AsyncIterator[FakeCreateOS]:
    clock = VirtualClock()
    async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()) as fake:
        yield fake
        assert fake.errors == []
    clock.close()


@pytest_asyncio.fixture(name="provider")
async def _provider(fake: FakeCreateOS) -> AsyncIterator[CreateosProvider]:
    provider = CreateosProvider(
        clock=fake.clock, pacer=Pacer.disabled(), transport=clock_transport(fake.clock)
    )
    yield provider
    await provider.shutdown()


@pytest.fixture(name="env")
def _env(fake: FakeCreateOS) -> Environment:
    config: dict[str, Any] = {
        "apiUrl": fake.url,
        "apiKey": fake.api_key,
        "shape": "s-1vcpu-1gb",
        "reuseLease": True,
        "timeoutMs": 60_000,
    }
    return Environment(company_id="company", environment_id="env", config=config)


@pytest_asyncio.fixture(name="lease")
async def _lease(provider: CreateosProvider, env: Environment) -> Lease:
    return await provider.acquire_lease(env, run_id="run")


def requests(fake: FakeCreateOS, operation: str) -> int:
    return len(fake.journal.requests(operation))


def lease_id(lease: Lease) -> str:
    assert lease.provider_lease_id is not None
    return lease.provider_lease_id


async def test_an_ambiguous_process_creation_blocks_reuse_until_destroy(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, lease: Lease
) -> None:
    fake.faults.add(Fault("create_process", LostReply()))
    with pytest.raises(CreateosCleanupError) as info:
        await provider.execute(env, lease, "/bin/echo", ["hi"])
    assert str(info.value) == (
        "CreateOS process creation could not be confirmed; destroy the lease before reusing it."
    )
    assert len(fake.sandbox(lease_id(lease)).processes) == 1  # it did start
    with pytest.raises(CreateosError) as again:
        await provider.execute(env, lease, "/bin/true")
    assert str(again.value) == "CreateOS lease is closing or requires cleanup."
    with pytest.raises(CreateosError) as release:
        await provider.release_lease(env, lease_id(lease), lease.metadata)
    assert str(release.value) == (
        "CreateOS process cleanup is unconfirmed; destroy this lease before reusing it."
    )
    assert requests(fake, "pause_sandbox") == 0
    await provider.destroy_lease(env, lease_id(lease), lease.metadata)
    assert fake.journal.requests()[-1].operation == "delete_sandbox"


async def test_a_transient_error_during_resume_neither_expires_nor_deletes(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, lease: Lease
) -> None:
    await provider.release_lease(env, lease_id(lease), lease.metadata)
    assert fake.sandbox(lease_id(lease)).status == "paused"
    fake.faults.add(Fault("resume_sandbox", HttpError(503, message=SECRET)))
    with pytest.raises(CreateosApiError) as info:
        await provider.resume_lease(env, lease_id(lease), lease.metadata)
    assert str(info.value) == "CreateOS request failed (HTTP 503) during sandbox lifecycle."
    assert info.value.status == 503
    assert requests(fake, "delete_sandbox") == 0
    assert fake.sandbox(lease_id(lease)).status == "paused"
    resumed = await provider.resume_lease(env, lease_id(lease), lease.metadata)
    assert resumed.provider_lease_id == lease.provider_lease_id
    assert resumed.metadata["resumedLease"] is True


async def test_a_tampered_marker_expires_the_lease_without_deleting(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, lease: Lease
) -> None:
    await provider.release_lease(env, lease_id(lease), lease.metadata)
    fake.faults.tamper_file(lease_id(lease), MARKER_PATH, b"00000000-0000-4000-8000-000000000000")
    expired = await provider.resume_lease(env, lease_id(lease), lease.metadata)
    assert (expired.provider_lease_id, expired.metadata) == (None, {"expired": True})
    assert requests(fake, "delete_sandbox") == 0


async def test_a_sandbox_that_failed_behind_the_providers_back_expires(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, lease: Lease
) -> None:
    await provider.release_lease(env, lease_id(lease), lease.metadata)
    fake.faults.add(Fault("get_sandbox", SetStatus("failed"), sandbox_id=lease_id(lease)))
    expired = await provider.resume_lease(env, lease_id(lease), lease.metadata)
    assert expired.provider_lease_id is None
    assert requests(fake, "resume_sandbox") == 0


async def test_a_cut_output_stream_is_resumed_from_the_last_frame(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, lease: Lease
) -> None:
    fault = fake.faults.add(Fault("connect_process", CutStream(after_frames=1)))
    script = "echo one; sleep 1; echo two; sleep 1; echo three"
    result = await provider.execute(env, lease, "/bin/bash", ["-c", script])
    assert (result.exit_code, result.stdout) == (0, "one\ntwo\nthree\n")
    assert fake.faults.fire_count(fault) == 1
    assert requests(fake, "connect_process") == 2  # one cut, one replay after seq 1


async def test_a_sequence_gap_fails_closed_and_kills_the_process(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, lease: Lease
) -> None:
    fake.faults.add(Fault("connect_process", SkipFrame(1)))
    script = "echo one; sleep 1; echo two"
    with pytest.raises(CreateosError) as info:
        await provider.execute(env, lease, "/bin/bash", ["-c", script])
    assert str(info.value) == "CreateOS process output has a sequence gap."
    assert requests(fake, "kill_process") == 1


async def test_rate_limited_reconnects_are_bounded(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, lease: Lease
) -> None:
    fake.faults.add(Fault("connect_process", HttpError(429, retry_after=1), times=3))
    result = await provider.execute(env, lease, "/bin/echo", ["patient"])
    assert (result.exit_code, result.stdout) == (0, "patient\n")
    fake.faults.add(Fault("connect_process", HttpError(429, retry_after=1), times=4))
    with pytest.raises(CreateosError) as info:
        await provider.execute(env, lease, "/bin/echo", ["impatient"])
    assert str(info.value) == "CreateOS process output connection failed."
    assert SECRET not in str(info.value)
    assert fake.api_key not in str(info.value)
