"""Acquire, lease metadata and the guard errors (spec §6.2-6.4) against the fake."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest

from fake_server import Step, TransitionPolicy
from pytest_createos.provider import (
    CreateosApiError,
    CreateosCleanupError,
    CreateosError,
    Lease,
    RealizedWorkspace,
)
from pytest_createos.provider._signal import OperationTimeout
from tests.provider.conftest import fail, make_env, operations

if TYPE_CHECKING:
    from fake_server import FakeCreateOS
    from pytest_createos.provider import CreateosProvider, Environment

MARKER = "/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease"
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
ACQUIRE_OPERATIONS = ["create_sandbox", "get_sandbox", "exec", "upload_file"]


@pytest.mark.asyncio
async def test_acquire_prepares_a_running_sandbox_with_a_marker(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """The lease names a running sandbox whose workspace holds the lease's marker."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    sandbox = fake.sandbox(lease.provider_lease_id)
    assert sandbox.status == "running"
    marker = lease.metadata["marker"]
    assert UUID4.fullmatch(marker)
    assert sandbox.disk.read_file(MARKER) == marker.encode()
    assert sandbox.disk.is_dir("/paperclip-workspace")
    assert operations(fake) == ACQUIRE_OPERATIONS


@pytest.mark.asyncio
async def test_lease_metadata_shape_and_no_secret(
    fake: FakeCreateOS, provider: CreateosProvider
) -> None:
    """Metadata is JSON with the spec's keys; the API key never appears in the lease."""
    env = make_env(fake, apiUrl=fake.url + "/v1/", region="eu", reuseLease=True)
    lease = await provider.acquire_lease(env, run_id="r1")
    metadata = dict(lease.metadata)
    metadata.pop("marker")
    assert metadata == {
        "provider": "createos",
        "apiUrl": fake.url,
        "companyId": "company-a",
        "environmentId": "env-a",
        "remoteCwd": "/paperclip-workspace",
        "shellCommand": "bash",
        "shape": "s-1vcpu-1gb",
        "rootfs": None,
        "region": "eu",
        "reuseLease": True,
    }
    serialized = json.dumps({"id": lease.provider_lease_id, "metadata": lease.metadata})
    assert fake.api_key not in serialized
    assert not hasattr(lease, "expires_at")


@pytest.mark.asyncio
async def test_acquire_waits_for_creation_on_the_clock(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A create answered ``creating`` (older deployments) is polled every 250 ms of clock
    time until it runs."""
    fake.transitions = TransitionPolicy.after(1.0).override(creating=Step(seconds=1.0, reads=1))
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    assert fake.clock.now() == pytest.approx(1.0)
    assert operations(fake).count("get_sandbox") == 5


@pytest.mark.asyncio
async def test_failure_after_create_deletes_the_sandbox_and_keeps_the_error(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A failed step after creation cleans up and re-raises the original error."""
    fail(fake, "exec", 503)
    with pytest.raises(CreateosApiError) as caught:
        await provider.acquire_lease(env, run_id="r1")
    assert str(caught.value) == "CreateOS request failed (HTTP 503) during workspace command."
    assert operations(fake)[-1] == "delete_sandbox"
    (sandbox,) = fake.sandboxes()
    assert sandbox.status in ("destroying", "destroyed")


@pytest.mark.asyncio
async def test_workspace_preparation_needs_bash_success(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A failing ``mkdir`` means the image is unusable; the sandbox is deleted."""
    fake.commands.register("mkdir", lambda io: 1)
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env, run_id="r1")
    assert str(caught.value) == (
        "CreateOS workspace preparation failed; the image must provide Bash."
    )
    assert operations(fake)[-1] == "delete_sandbox"


@pytest.mark.asyncio
async def test_unconfirmed_cleanup_names_only_the_sandbox(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """When the delete after a failed setup fails too, the error names the sandbox to check."""
    fail(fake, "upload_file", 503)
    fail(fake, "delete_sandbox", 500)
    with pytest.raises(CreateosCleanupError) as caught:
        await provider.acquire_lease(env, run_id="r1")
    (sandbox,) = fake.sandboxes()
    assert str(caught.value) == (
        f"CreateOS setup failed and cleanup is unconfirmed for sandbox {sandbox.id}."
    )
    assert sandbox.status == "running"


@pytest.mark.asyncio
async def test_acquire_deadline_covers_every_step(
    fake: FakeCreateOS, provider: CreateosProvider
) -> None:
    """One timeoutMs bounds the whole acquire; the sandbox is still deleted afterwards."""
    fake.transitions = TransitionPolicy.after(60.0).override(creating=Step(seconds=60, reads=1))
    env = make_env(fake, timeoutMs=2000)
    with pytest.raises(OperationTimeout):
        await provider.acquire_lease(env, run_id="r1")
    assert operations(fake)[-1] == "delete_sandbox"
    assert fake.clock.now() == pytest.approx(2.0, abs=0.01)


@pytest.mark.asyncio
async def test_create_failure_has_nothing_to_clean_up(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """Without a sandbox id there is nothing to delete; the error propagates."""
    fail(fake, "create_sandbox", 0)
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env, run_id="r1")
    assert str(caught.value) == "CreateOS connection failed."
    assert operations(fake) == ["create_sandbox"]


# -- guards: every one answers without a single request ----------------------------------------


def foreign_metadata(fake: FakeCreateOS, **changes: Any) -> dict[str, Any]:
    metadata = {
        "provider": "createos",
        "apiUrl": fake.url,
        "companyId": "company-a",
        "environmentId": "env-a",
        "marker": "00000000-0000-4000-8000-000000000000",
        "shape": "s-1vcpu-1gb",
        "rootfs": None,
        "region": None,
    }
    metadata.update(changes)
    return metadata


MISMATCHES: list[dict[str, Any]] = [
    {"companyId": "company-b"},
    {"environmentId": "env-b"},
    {"apiUrl": "https://api.sb.createos.sh"},
    {"provider": "e2b"},
]


@pytest.mark.asyncio
@pytest.mark.parametrize("changes", MISMATCHES)
async def test_workspace_of_another_environment_is_refused(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, changes: dict[str, Any]
) -> None:
    """Another company's or environment's lease never gets a workspace."""
    lease = Lease("sb-1", foreign_metadata(fake, **changes))
    with pytest.raises(CreateosError) as caught:
        await provider.realize_workspace(env, lease)
    assert str(caught.value) == "CreateOS workspace requires a lease from this environment."
    with pytest.raises(CreateosError) as caught:
        await provider.realize_workspace(env, Lease(None, foreign_metadata(fake)))
    assert str(caught.value) == "CreateOS workspace requires a lease from this environment."
    assert operations(fake) == []


@pytest.mark.asyncio
async def test_realize_workspace_is_local(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """The workspace is a constant path; host paths are ignored and nothing is requested."""
    lease = Lease("sb-1", foreign_metadata(fake))
    realized = await provider.realize_workspace(env, lease, {"localPath": "/home/me/project"})
    assert realized == RealizedWorkspace(
        cwd="/paperclip-workspace",
        metadata={"provider": "createos", "remoteCwd": "/paperclip-workspace"},
    )
    assert operations(fake) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("changes", [*MISMATCHES, None])
async def test_execute_and_sync_refuse_foreign_leases(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, changes: dict[str, Any] | None
) -> None:
    """Commands and transfers need a lease from this environment."""
    lease = Lease("sb-1", foreign_metadata(fake, **changes)) if changes else Lease(None, {})
    message = "CreateOS execution requires a lease from this environment."
    with pytest.raises(CreateosError) as caught:
        await provider.execute(env, lease, "/bin/echo", ["hi"])
    assert str(caught.value) == message
    with pytest.raises(CreateosError) as caught:
        await provider.sync_in(env, lease, [])
    assert str(caught.value) == message
    with pytest.raises(CreateosError) as caught:
        await provider.sync_out(env, lease, [])
    assert str(caught.value) == message
    assert operations(fake) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("changes", [*MISMATCHES, None])
async def test_lifecycle_refuses_foreign_leases(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, changes: dict[str, Any] | None
) -> None:
    """Resume, release and destroy never touch another environment's sandbox."""
    metadata = foreign_metadata(fake, **changes) if changes else None
    message = "CreateOS lease does not belong to this environment."
    for call in (provider.resume_lease, provider.release_lease, provider.destroy_lease):
        with pytest.raises(CreateosError) as caught:
            await call(env, "sb-1", metadata)
        assert str(caught.value) == message
    assert operations(fake) == []


@pytest.mark.asyncio
async def test_release_without_a_lease_id_is_a_no_op(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A lease that never got a sandbox needs no cleanup (metadata is not even checked)."""
    await provider.release_lease(env, None, None)
    await provider.destroy_lease(env, "", {"provider": "other"})
    assert operations(fake) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("timeout", [0, -5, 1.5, 86_400_001, True])
async def test_bad_command_timeout_is_refused(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, timeout: Any
) -> None:
    """A per-command timeout outside 1..86400000 ms never reaches the API."""
    lease = Lease("sb-1", foreign_metadata(fake))
    with pytest.raises(CreateosError) as caught:
        await provider.execute(env, lease, "/bin/echo", timeout_ms=timeout)
    assert str(caught.value) == "Invalid CreateOS command timeout."
    assert operations(fake) == []


@pytest.mark.asyncio
async def test_no_work_after_shutdown(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A worker that is shutting down refuses new commands and transfers."""
    lease = Lease("sb-1", foreign_metadata(fake))
    await provider.shutdown()
    message = "CreateOS lease is closing or requires cleanup."
    with pytest.raises(CreateosError) as caught:
        await provider.execute(env, lease, "/bin/echo")
    assert str(caught.value) == message
    with pytest.raises(CreateosError) as caught:
        await provider.sync_in(env, lease, [])
    assert str(caught.value) == message
    assert operations(fake) == []


@pytest.mark.asyncio
async def test_no_new_lease_after_shutdown(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """``shutdown()`` refuses new work for good: acquire, resume and probe create nothing."""
    lease = await provider.acquire_lease(env, run_id="r1")
    assert lease.provider_lease_id is not None
    await provider.shutdown()
    shut = "CreateOS provider is shut down; create a new provider for new leases."
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env, run_id="r2")
    assert str(caught.value) == shut
    with pytest.raises(CreateosError) as caught:
        await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert str(caught.value) == shut
    probe = await provider.probe(env)
    assert (probe.ok, probe.summary) == (False, shut)
    assert [s.id for s in fake.sandboxes()] == [lease.provider_lease_id]
    await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
