"""execute(): arguments arrive verbatim, stdin by file, output streamed to a log callback."""

import pytest


@pytest.mark.asyncio
async def test_execute_with_cwd_env_stdin_and_log(createos_provider, createos_env, createos_lease):
    logged = []
    result = await createos_provider.execute(
        createos_env,
        createos_lease,
        "/bin/bash",
        ["-c", 'pwd; echo "CI=$CI"; cat; echo "$1" >&2', "bash", "a'; touch /bad; echo '"],
        cwd="/paperclip-workspace",
        env_vars={"CI": "1"},
        stdin="input text\n",
        timeout_ms=60_000,
        log=lambda stream, text: logged.append((stream, text)),
    )
    assert (result.exit_code, result.signal, result.timed_out) == (0, None, False)
    assert result.stdout == "/paperclip-workspace\nCI=1\ninput text\n"
    assert result.stderr == "a'; touch /bad; echo '\n"  # data, never shell syntax
    assert "".join(text for stream, text in logged if stream == "stdout") == result.stdout
    assert result.metadata["processId"].startswith("proc-")
    assert result.metadata["outputTruncated"] is False

    probe = await createos_provider.execute(createos_env, createos_lease, "test", ["-e", "/bad"])
    assert probe.exit_code == 1  # nothing was touched
