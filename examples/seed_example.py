"""A lease belongs to the environment that acquired it; another one cannot use it."""

import pytest

from pytest_createos.provider import CreateosError, Environment


@pytest.mark.asyncio
async def test_workspace_needs_a_lease_from_this_environment(
    createos_provider, createos_env, createos_lease
):
    workspace = await createos_provider.realize_workspace(createos_env, createos_lease)
    assert workspace.cwd == "/paperclip-workspace"

    other = Environment("another-company", createos_env.environment_id, createos_env.config)
    with pytest.raises(CreateosError) as caught:
        await createos_provider.realize_workspace(other, createos_lease)
    assert str(caught.value) == "CreateOS workspace requires a lease from this environment."
