"""Release vs destroy, cancellation ordering and shutdown (spec §6.6, §6.7, §6.9)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from fake_server import TransitionPolicy
from pytest_createos.provider import CreateosApiError, CreateosError
from tests.provider.conftest import fail, make_env, operations

if TYPE_CHECKING:
    from fake_server import FakeCreateOS
    from pytest_createos.provider import CreateosProvider, Environment, ExecuteResult, Lease


@pytest.mark.asyncio
async def test_release_with_reuse_pauses(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """With ``reuseLease`` the sandbox is paused (its disk survives), not deleted."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    assert lease.provider_lease_id is not None
    before = len(operations(fake))
    assert await provider.release_lease(reuse_env, lease.provider_lease_id, lease.metadata) is None
    sandbox = fake.sandbox(lease.provider_lease_id)
    assert sandbox.status == "paused"
    assert sandbox.disk.is_file("/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease")
    calls = operations(fake)[before:]
    assert calls.count("pause_sandbox") == 1
    assert "delete_sandbox" not in calls


@pytest.mark.asyncio
async def test_release_without_reuse_deletes(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A disposable lease is deleted on release."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    assert operations(fake)[-1] == "delete_sandbox"
    assert fake.sandbox(lease.provider_lease_id).status in ("destroying", "destroyed")


@pytest.mark.asyncio
async def test_release_follows_the_current_config_not_the_metadata(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment, env: Environment
) -> None:
    """A lease made with reuse is deleted once the environment turned reuse off."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    assert lease.metadata["reuseLease"] is True
    await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    assert operations(fake)[-1] == "delete_sandbox"


@pytest.mark.asyncio
async def test_destroy_deletes_even_with_reuse(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """Destroy always deletes; a second destroy of the gone sandbox is fine (404)."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    await provider.destroy_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    await provider.destroy_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert operations(fake)[-2:] == ["delete_sandbox", "delete_sandbox"]


@pytest.mark.asyncio
async def test_release_of_a_vanished_sandbox_is_quiet(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """Pausing a sandbox that is gone (404) is not an error: there is nothing to keep."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    fail(fake, "get_sandbox", 404)
    await provider.release_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert "pause_sandbox" not in operations(fake)


@pytest.mark.asyncio
async def test_release_errors_propagate(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """A failed pause is reported, and the lease can be released again afterwards."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    assert lease.provider_lease_id is not None
    fail(fake, "pause_sandbox", 503)
    with pytest.raises(CreateosApiError) as caught:
        await provider.release_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert str(caught.value) == "CreateOS request failed (HTTP 503) during sandbox lifecycle."
    await provider.release_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert fake.sandbox(lease.provider_lease_id).status == "paused"


async def start_long_command(
    provider: CreateosProvider, env: Environment, lease: Lease, fake: FakeCreateOS
) -> asyncio.Task[ExecuteResult]:
    """A ``sleep 600`` command, returned once its output stream is attached."""
    task = asyncio.ensure_future(provider.execute(env, lease, "sleep", ["600"]))
    await fake.clock.sleep(1)  # virtual: time jumps once everyone waits
    assert "connect_process" in operations(fake)
    assert not task.done()
    return task


@pytest.mark.asyncio
async def test_release_cancels_commands_and_kills_them_before_pausing(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """In-flight work is cancelled and its process deleted before the pause is sent."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    command = await start_long_command(provider, reuse_env, lease, fake)
    await provider.release_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    with pytest.raises(CreateosError) as caught:
        await command
    assert str(caught.value) == "CreateOS command was cancelled."
    calls = operations(fake)
    assert calls.index("kill_process") < calls.index("pause_sandbox")
    assert fake.clock.now() < 600


@pytest.mark.asyncio
async def test_second_release_while_closing_is_refused(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """Cleanup runs once per lease at a time; new commands are refused meanwhile."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    command = await start_long_command(provider, reuse_env, lease, fake)
    first = asyncio.ensure_future(
        provider.release_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    )
    await asyncio.sleep(0)
    with pytest.raises(CreateosError) as caught:
        await provider.destroy_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert str(caught.value) == "CreateOS lease cleanup is already in progress."
    with pytest.raises(CreateosError) as caught:
        await provider.execute(reuse_env, lease, "/bin/echo")
    assert str(caught.value) == "CreateOS lease is closing or requires cleanup."
    with pytest.raises(CreateosError) as caught:
        await provider.resume_lease(reuse_env, lease.provider_lease_id or "", lease.metadata)
    assert str(caught.value) == "CreateOS lease cleanup must finish before resume."
    await first
    with pytest.raises(CreateosError):
        await command
    result = await provider.resume_lease(reuse_env, lease.provider_lease_id or "", lease.metadata)
    assert result.provider_lease_id == lease.provider_lease_id


@pytest.mark.asyncio
async def test_release_does_not_touch_other_leases(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """Cancellation is scoped to the released lease."""
    one = await provider.acquire_lease(reuse_env, run_id="r1")
    other = await provider.acquire_lease(reuse_env, run_id="r2")
    command = await start_long_command(provider, reuse_env, other, fake)
    await provider.release_lease(reuse_env, one.provider_lease_id, one.metadata)
    assert not command.done()
    await provider.destroy_lease(reuse_env, other.provider_lease_id, other.metadata)
    with pytest.raises(CreateosError) as caught:
        await command
    assert str(caught.value) == "CreateOS command was cancelled."


@pytest.mark.asyncio
async def test_shutdown_cancels_active_work_and_keeps_sandboxes(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """Shutdown aborts and awaits commands (their processes are killed) but keeps leases."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    assert lease.provider_lease_id is not None
    command = await start_long_command(provider, reuse_env, lease, fake)
    await provider.shutdown()
    assert command.done()
    with pytest.raises(CreateosError) as caught:
        command.result()
    assert str(caught.value) == "CreateOS command was cancelled."
    assert operations(fake)[-1] == "kill_process"
    assert fake.sandbox(lease.provider_lease_id).status == "running"
    with pytest.raises(CreateosError) as caught:
        await provider.execute(reuse_env, lease, "/bin/echo")
    assert str(caught.value) == "CreateOS lease is closing or requires cleanup."


@pytest.mark.asyncio
async def test_command_timeout_is_not_cancellation(
    fake: FakeCreateOS, provider: CreateosProvider
) -> None:
    """A per-command timeout returns a timed-out result; the lease stays usable."""
    env = make_env(fake, reuseLease=True)
    lease = await provider.acquire_lease(env, run_id="r1")
    result = await provider.execute(env, lease, "sleep", ["60"], timeout_ms=1000)
    assert (result.timed_out, result.exit_code) == (True, None)
    echoed = await provider.execute(env, lease, "/bin/echo", ["still", "here"])
    assert echoed.stdout == "still here\n"


@pytest.mark.asyncio
async def test_realistic_pause_and_resume_take_only_virtual_time(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """Seconds-long pause and resume are polled on the virtual clock, not waited for."""
    fake.transitions = TransitionPolicy.realistic()
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    assert lease.provider_lease_id is not None
    started = fake.clock.now()
    await provider.release_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    paused_at = fake.clock.now()
    assert fake.sandbox(lease.provider_lease_id).status == "paused"
    assert paused_at >= started + 2.0
    resumed = await provider.resume_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert resumed.metadata["resumedLease"] is True
    assert fake.clock.now() >= paused_at + 3.0
    assert operations(fake).count("pause_sandbox") == 1
    assert operations(fake).count("resume_sandbox") == 1


@pytest.mark.asyncio
async def test_finished_work_leaves_no_per_lease_state(
    fake: FakeCreateOS, provider: CreateosProvider, reuse_env: Environment
) -> None:
    """Scopes exist only while something is running, closing or unconfirmed (bounded memory)."""
    lease = await provider.acquire_lease(reuse_env, run_id="r1")
    for word in ("a", "b", "c"):
        result = await provider.execute(reuse_env, lease, "/bin/echo", [word])
        assert result.stdout == f"{word}\n"
    await provider.release_lease(reuse_env, lease.provider_lease_id, lease.metadata)
    assert len(provider._scopes) == 0
