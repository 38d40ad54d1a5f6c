"""Real programs in a sandbox: the process runtime runs python3 and git under bubblewrap."""

import pytest


@pytest.mark.createos(runtime="process")
@pytest.mark.asyncio
async def test_python_and_git_run_for_real(createos_provider, createos_env, createos_lease):
    provider, env, lease = createos_provider, createos_env, createos_lease
    result = await provider.execute(
        env, lease, "python3", ["-c", "import sys; print(sys.version_info[0])"]
    )
    assert (result.exit_code, result.stdout) == (0, "3\n")

    script = "git init -q . && git -c user.name=t -c user.email=t@e commit -q --allow-empty -m one"
    result = await provider.execute(
        env, lease, "/bin/bash", ["-c", script + " && git log --format=%s"]
    )
    assert (result.exit_code, result.stdout) == (0, "one\n")
