"""A stream cut mid-output: the provider reconnects from its cursor and loses nothing."""

import pytest

from fake_server.faults import CutStream


@pytest.mark.createos_fault("connect_process", CutStream(after_frames=1))
@pytest.mark.asyncio
async def test_a_cut_output_stream_is_resumed(
    createos_provider, createos_env, createos_lease, createos_fake
):
    result = await createos_provider.execute(
        createos_env, createos_lease, "/bin/bash", ["-c", "echo one; echo two; echo three"]
    )
    assert (result.exit_code, result.stdout) == (0, "one\ntwo\nthree\n")
    assert len(createos_fake.journal.requests("connect_process")) == 2  # cut, then resumed
    assert [firing.operation for firing in createos_fake.faults.fired] == ["connect_process"]
