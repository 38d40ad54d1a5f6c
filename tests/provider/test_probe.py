"""Probe (spec §6.9): create, echo, always delete; a failed delete is never hidden."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from fake_server import Step, TransitionPolicy
from pytest_createos.provider import CreateosApiError, ProbeResult
from tests.provider.conftest import fail, make_env, operations

if TYPE_CHECKING:
    from fake_server import FakeCreateOS
    from fake_server.runtime.bashkit import CommandIO
    from pytest_createos.provider import CreateosProvider, Environment


@pytest.mark.asyncio
async def test_probe_succeeds_and_leaves_nothing_behind(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A healthy environment probes ok; the throwaway sandbox is deleted last."""
    result = await provider.probe(env)
    assert result == ProbeResult(
        ok=True, summary="CreateOS sandbox creation and command execution succeeded."
    )
    calls = operations(fake)
    assert calls[:4] == ["create_sandbox", "get_sandbox", "exec", "upload_file"]
    assert "create_process" in calls
    assert calls[-1] == "delete_sandbox"
    (sandbox,) = fake.sandboxes()
    assert sandbox.status in ("destroying", "destroyed")


@pytest.mark.asyncio
async def test_probe_reports_creation_failure(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """Without a sandbox there is nothing to delete; the summary is the error message."""
    fail(fake, "create_sandbox", 402)
    result = await provider.probe(env)
    assert result == ProbeResult(
        ok=False, summary="CreateOS request failed (HTTP 402) during sandbox lifecycle."
    )
    assert operations(fake) == ["create_sandbox"]


@pytest.mark.asyncio
async def test_probe_reports_command_failure_and_still_deletes(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A failed command after creation is reported and the sandbox is deleted."""
    fail(fake, "create_process", 400)
    result = await provider.probe(env)
    assert result == ProbeResult(
        ok=False, summary="CreateOS request failed (HTTP 400) during process creation."
    )
    assert operations(fake)[-1] == "delete_sandbox"


@pytest.mark.asyncio
async def test_probe_requires_the_ready_token(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A command that exits 0 without printing the token is a failed probe."""

    async def mute_echo(io: CommandIO) -> int:
        return 0

    fake.commands.register("echo", mute_echo)
    result = await provider.probe(env)
    assert result == ProbeResult(ok=False, summary="CreateOS command probe failed.")
    assert operations(fake)[-1] == "delete_sandbox"


@pytest.mark.asyncio
async def test_probe_reports_config_errors_without_requests(
    fake: FakeCreateOS, provider: CreateosProvider
) -> None:
    """A broken config is a failed probe, not an exception."""
    result = await provider.probe(make_env(fake, apiUrl="http://remote.test"))
    assert not result.ok
    assert result.summary.startswith("CreateOS API URL must be an HTTPS origin")
    assert operations(fake) == []


@pytest.mark.asyncio
async def test_probe_times_out_on_the_clock(fake: FakeCreateOS, provider: CreateosProvider) -> None:
    """A sandbox that never starts fails the probe after timeoutMs of clock time."""
    # Answered ``creating`` at once, as older deployments did.
    fake.transitions = TransitionPolicy.after(3600.0).override(creating=Step(seconds=3600, reads=1))
    result = await provider.probe(make_env(fake, timeoutMs=5000))
    assert result == ProbeResult(ok=False, summary="CreateOS operation timed out.")
    assert operations(fake)[-1] == "delete_sandbox"


@pytest.mark.asyncio
async def test_failed_delete_makes_the_probe_raise(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> None:
    """A sandbox that may have leaked is never reported as a quiet success."""
    fail(fake, "delete_sandbox", 500)
    with pytest.raises(CreateosApiError) as caught:
        await provider.probe(env)
    assert str(caught.value) == "CreateOS request failed (HTTP 500) during sandbox lifecycle."
    assert operations(fake)[-1] == "delete_sandbox"
