"""Resume (spec §6.5): expired without requests, expired on evidence, transient errors raise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from fake_server import TransitionPolicy
from pytest_createos.provider import CreateosApiError, CreateosCleanupError, CreateosError, Lease
from tests.provider.conftest import fail, make_env, operations

if TYPE_CHECKING:
    from fake_server import FakeCreateOS
    from pytest_createos.provider import CreateosProvider, Environment

MARKER = "/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease"
EXPIRED = Lease(provider_lease_id=None, metadata={"expired": True})


async def paused_lease(provider: CreateosProvider, env: Environment) -> Lease:
    lease = await provider.acquire_lease(env, run_id="r1")
    await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    return lease


@pytest.mark.asyncio
async def test_resume_brings_a_paused_lease_back(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """Same sandbox, original metadata plus ``resumedLease``; the sandbox runs again."""
    lease = await paused_lease(provider, reuse_env)
    assert lease.provider_lease_id is not None
    assert fake.sandbox(lease.provider_lease_id).status == "paused"
    before = len(operations(fake))
    resumed = await provider.resume_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert resumed == Lease(lease.provider_lease_id, {**lease.metadata, "resumedLease": True})
    assert fake.sandbox(lease.provider_lease_id).status == "running"
    calls = operations(fake)[before:]
    assert calls[0] == "get_sandbox"
    assert calls.count("resume_sandbox") == 1
    assert calls[-1] == "exec"


@pytest.mark.asyncio
async def test_resume_of_a_running_lease_only_checks_the_marker(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """Resume ignores ``reuseLease`` and works on a sandbox that was never paused."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    before = len(operations(fake))
    resumed = await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert resumed.provider_lease_id == lease.provider_lease_id
    assert operations(fake)[before:] == ["get_sandbox", "get_sandbox", "exec"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "changes",
    [
        {"marker": None},
        {"marker": 5},
        {"marker": ""},
        {"marker": "ABCDEF00-0000-4000-8000-000000000000"},
        {"marker": "0000000-0000-4000-8000-000000000000"},
        {"marker": "00000000-0000-4000-8000-000000000000/.."},
        {"shape": "s-2vcpu-4gb"},
        {"rootfs": "devbox:1"},
        {"region": "eu"},
        {"region": ""},
    ],
)
async def test_stale_metadata_expires_without_a_request(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, changes: dict[str, Any]
) -> None:
    """A bad marker or a changed shape, rootfs or region expires the lease offline."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    before = len(operations(fake))
    metadata = {**lease.metadata, **changes}
    assert await provider.resume_lease(env, lease.provider_lease_id, metadata) == EXPIRED
    assert len(operations(fake)) == before


@pytest.mark.asyncio
async def test_missing_rootfs_is_not_null(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """Strict comparison: metadata without ``rootfs`` differs from an unset config value."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    metadata = {k: v for k, v in lease.metadata.items() if k != "rootfs"}
    assert await provider.resume_lease(env, lease.provider_lease_id, metadata) == EXPIRED


@pytest.mark.asyncio
async def test_config_change_expires_the_lease(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A lease made for another shape is not resumed after the environment changed."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    changed = make_env(fake, region="us")
    assert await provider.resume_lease(changed, lease.provider_lease_id, lease.metadata) == EXPIRED


@pytest.mark.asyncio
@pytest.mark.parametrize("status", ["destroyed", "failed"])
async def test_terminal_sandbox_expires(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, status: str
) -> None:
    """A destroyed or failed sandbox cannot come back."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    fake.sandbox(lease.provider_lease_id).force_status(status)
    assert await provider.resume_lease(env, lease.provider_lease_id, lease.metadata) == EXPIRED
    assert "delete_sandbox" not in operations(fake)


@pytest.mark.asyncio
async def test_deleted_sandbox_expires(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """After destroy, the stored lease reads as expired."""
    lease = await provider.acquire_lease(env, run_id="r1")
    await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
    assert lease.provider_lease_id is not None
    assert await provider.resume_lease(env, lease.provider_lease_id, lease.metadata) == EXPIRED


@pytest.mark.asyncio
@pytest.mark.parametrize("operation", ["get_sandbox", "resume_sandbox", "exec"])
async def test_not_found_at_any_step_expires(
    fake: FakeCreateOS,
    provider: CreateosProvider,
    reuse_env: Environment,
    operation: str,
) -> None:
    """A 404 while reading, resuming or checking the marker means the sandbox is gone."""
    lease = await paused_lease(provider, reuse_env)
    assert lease.provider_lease_id is not None
    fail(fake, operation, 404)
    assert (
        await provider.resume_lease(reuse_env, lease.provider_lease_id, lease.metadata) == EXPIRED
    )


@pytest.mark.asyncio
async def test_marker_mismatch_expires(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A sandbox whose marker differs (recycled id, tampering) is not this lease."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    disk = fake.sandbox(lease.provider_lease_id).disk
    disk.write_file(MARKER, lease.metadata["marker"].encode() + b"\n")
    assert await provider.resume_lease(env, lease.provider_lease_id, lease.metadata) == EXPIRED
    disk.remove(MARKER)
    assert await provider.resume_lease(env, lease.provider_lease_id, lease.metadata) == EXPIRED


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("operation", "status", "message"),
    [
        ("get_sandbox", 503, "CreateOS request failed (HTTP 503) during sandbox lifecycle."),
        ("get_sandbox", 429, "CreateOS request failed (HTTP 429) during sandbox lifecycle."),
        ("resume_sandbox", 502, "CreateOS request failed (HTTP 502) during sandbox lifecycle."),
        ("exec", 500, "CreateOS request failed (HTTP 500) during workspace command."),
        ("get_sandbox", 0, "CreateOS connection failed."),
    ],
)
async def test_transient_errors_raise_and_never_delete(
    fake: FakeCreateOS,
    provider: CreateosProvider,
    reuse_env: Environment,
    operation: str,
    status: int,
    message: str,
) -> None:
    """A transient failure is the host's to retry: the lease neither expires nor is deleted."""
    lease = await paused_lease(provider, reuse_env)
    assert lease.provider_lease_id is not None
    fail(fake, operation, status)
    with pytest.raises(CreateosError) as caught:
        await provider.resume_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert str(caught.value) == message
    assert "delete_sandbox" not in operations(fake)
    assert fake.sandbox(lease.provider_lease_id).status in ("paused", "running", "resuming")


@pytest.mark.asyncio
@pytest.mark.parametrize("status", ["destroying", "forking"])
async def test_states_that_cannot_resume_raise(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, status: str
) -> None:
    """``destroying`` or ``forking`` is not expiry evidence; it raises instead."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    fake.transitions = TransitionPolicy.after(3600.0)  # ``destroying`` stays visible
    fake.sandbox(lease.provider_lease_id).force_status(status)
    with pytest.raises(CreateosError) as caught:
        await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert str(caught.value) == "CreateOS sandbox did not reach running."


@pytest.mark.asyncio
async def test_ambiguous_process_creation_blocks_reuse_until_destroy(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """After an unconfirmed process creation only destroy is allowed (spec guarantee 39)."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    lease_id = lease.provider_lease_id
    assert lease_id is not None
    fail(fake, "create_process", 502)
    with pytest.raises(CreateosCleanupError) as caught:
        await provider.execute(reuse_env, lease, "/bin/echo", ["hi"])
    assert str(caught.value) == (
        "CreateOS process creation could not be confirmed; destroy the lease before reusing it."
    )
    before = len(operations(fake))
    with pytest.raises(CreateosError) as caught:
        await provider.resume_lease(reuse_env, lease_id, lease.metadata)
    assert str(caught.value) == "CreateOS lease cleanup must finish before resume."
    with pytest.raises(CreateosError) as caught:
        await provider.execute(reuse_env, lease, "/bin/echo", ["hi"])
    assert str(caught.value) == "CreateOS lease is closing or requires cleanup."
    with pytest.raises(CreateosError) as caught:
        await provider.release_lease(reuse_env, lease_id, lease.metadata)
    assert str(caught.value) == (
        "CreateOS process cleanup is unconfirmed; destroy this lease before reusing it."
    )
    assert operations(fake)[before:] == []
    await provider.destroy_lease(reuse_env, lease_id, lease.metadata)
    assert operations(fake)[before:] == ["delete_sandbox"]
    result = await provider.resume_lease(reuse_env, lease_id, lease.metadata)
    assert result == EXPIRED


@pytest.mark.asyncio
async def test_api_error_status_is_exposed(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """Hosts can branch on ``status`` without parsing the message."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    fail(fake, "get_sandbox", 503)
    with pytest.raises(CreateosApiError) as caught:
        await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert (caught.value.status, caught.value.label) == (503, "sandbox lifecycle")
