"""``execute`` end to end against ``FakeCreateOS`` over loopback: a real shell runs the command.

Time runs on the fake's ``VirtualClock``, so ``sleep 60`` with a 1 s timeout takes no real time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from _leased import Leased

from pytest_createos.provider import CreateosError
from pytest_createos.provider._config import parse_config
from pytest_createos.provider._execute import execute_command
from pytest_createos.provider._signal import AbortController
from pytest_createos.provider._types import ExecuteParams

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


HOSTILE = "a'; touch /bad; echo '"


class Sandbox(Leased):
    def requests(self) -> list[str]:
        return [f"{e.method} {e.path}" for e in self.fake.journal.requests()]


@pytest_asyncio.fixture
async def sandbox(leased: Leased) -> AsyncIterator[Sandbox]:
    yield Sandbox(**vars(leased))


@pytest.mark.asyncio
async def test_hostile_args_and_env_stay_data(sandbox: Sandbox) -> None:
    result = await sandbox.provider.execute(
        sandbox.env,
        sandbox.lease,
        "/bin/bash",
        ["-c", 'printf "%s|%s|%s" "$1" "$MESSAGE" "$PWD"', "argv0", HOSTILE],
        env_vars={"MESSAGE": "$(touch /bad)"},
        cwd="/paperclip-workspace",
    )
    assert result.stdout == f"{HOSTILE}|$(touch /bad)|/paperclip-workspace"
    assert (result.exit_code, result.signal, result.timed_out) == (0, None, False)
    assert sandbox.fake.sandbox(sandbox.id).disk.exists("/bad") is False


@pytest.mark.asyncio
async def test_hostile_cwd_stays_data(sandbox: Sandbox) -> None:
    disk = sandbox.fake.sandbox(sandbox.id).disk
    odd = "/paperclip-workspace/x'; touch /bad; echo '"
    disk.write_file(odd + "/f", b"")
    result = await sandbox.provider.execute(sandbox.env, sandbox.lease, "/bin/pwd", cwd=odd)
    assert result.stdout == odd + "\n"
    assert disk.exists("/bad") is False


@pytest.mark.asyncio
async def test_exit_code_stdout_and_stderr(sandbox: Sandbox) -> None:
    result = await sandbox.provider.execute(
        sandbox.env, sandbox.lease, "/bin/bash", ["-c", "echo out; echo err >&2; exit 7"]
    )
    assert (result.exit_code, result.stdout, result.stderr) == (7, "out\n", "err\n")
    assert result.metadata["outputTruncated"] is False
    assert result.metadata["processId"].startswith("proc-")


@pytest.mark.asyncio
async def test_stdin_is_staged_then_removed(sandbox: Sandbox) -> None:
    logged: list[tuple[str, str]] = []
    result = await sandbox.provider.execute(
        sandbox.env,
        sandbox.lease,
        "cat",
        stdin="line one\nsecret € two",
        log=lambda stream, text: logged.append((stream, text)),
    )
    assert result.stdout == "line one\nsecret € two"
    assert "".join(text for _, text in logged) == result.stdout
    disk = sandbox.fake.sandbox(sandbox.id).disk
    leftovers = [p for p in _listdir(disk, "/tmp") if p.startswith("paperclip-stdin-")]
    assert leftovers == []
    operations = sandbox.fake.journal.operations()
    assert operations[-5:] == [
        "upload_file",
        "create_process",
        "close_process_stdin",
        "connect_process",
        "exec",  # the rm, after the process finished
    ]


@pytest.mark.asyncio
async def test_empty_stdin_still_counts_as_stdin(sandbox: Sandbox) -> None:
    result = await sandbox.provider.execute(sandbox.env, sandbox.lease, "cat", stdin="")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "upload_file" in sandbox.fake.journal.operations()[-5:]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env_vars": {"1X": "v"}}, "Invalid sandbox environment variable."),
        ({"env_vars": {"X": "a\x00b"}}, "Sandbox command values cannot contain NUL."),
        ({"args": ["\x00"]}, "Sandbox command values cannot contain NUL."),
        ({"cwd": "/w\x00"}, "Sandbox command values cannot contain NUL."),
        # execute(env, lease, "echo", "hello world"): one string where the list goes.
        (
            {"args": "hello world"},
            "Sandbox command args must be a list of strings, one per argument.",
        ),
    ],
)
async def test_bad_input_makes_no_request(
    sandbox: Sandbox, kwargs: dict[str, object], message: str
) -> None:
    before = len(sandbox.requests())
    with pytest.raises(CreateosError) as info:
        await sandbox.provider.execute(sandbox.env, sandbox.lease, "echo", **kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message
    assert len(sandbox.requests()) == before


@pytest.mark.asyncio
async def test_timeout_keeps_partial_output_and_kills_the_tree(sandbox: Sandbox) -> None:
    start = sandbox.clock.now()
    result = await sandbox.provider.execute(
        sandbox.env,
        sandbox.lease,
        "/bin/bash",
        ["-c", "echo started; sleep 60; echo never"],
        timeout_ms=1000,
    )
    assert (result.timed_out, result.exit_code, result.signal) == (True, None, None)
    assert result.stdout == "started\n"
    assert sandbox.clock.now() - start < 60
    pid = result.metadata["processId"]
    assert f"DELETE /v1/sandboxes/{sandbox.id}/processes/{pid}" in sandbox.requests()
    process = sandbox.fake.sandbox(sandbox.id).processes[pid]
    assert process.tree_exited is True
    assert process.signal is not None  # killed, not exited on its own


@pytest.mark.asyncio
async def test_host_cancellation_kills_and_reports_cancelled(sandbox: Sandbox) -> None:
    config = parse_config(sandbox.env.config)
    client = sandbox.provider._client(config)
    controller = AbortController()

    def log(stream: str, text: str) -> None:
        controller.abort()

    with pytest.raises(CreateosError) as info:
        await execute_command(
            client,
            sandbox.id,
            ExecuteParams("/bin/bash", ("-c", "echo go; sleep 30")),
            controller.signal,
            log,
            clock=sandbox.clock,
        )
    assert str(info.value) == "CreateOS command was cancelled."
    assert sandbox.requests()[-1].startswith(f"DELETE /v1/sandboxes/{sandbox.id}/processes/")


@pytest.mark.asyncio
async def test_large_output_is_captured_whole_below_the_cap(sandbox: Sandbox) -> None:
    result = await sandbox.provider.execute(
        sandbox.env,
        sandbox.lease,
        "/bin/bash",
        ["-c", "for i in $(seq 1 2000); do echo line-$i-€; done"],
    )
    lines = result.stdout.splitlines()
    assert len(lines) == 2000
    assert lines[0] == "line-1-€"
    assert lines[-1] == "line-2000-€"


def _listdir(disk: object, path: str) -> list[str]:
    return [entry["name"] for entry in disk.fs.read_dir(path)]  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_output_over_the_cap_keeps_the_tail_and_says_so(sandbox: Sandbox) -> None:
    client = sandbox.provider._client(parse_config(sandbox.env.config))
    logged: list[str] = []
    result = await execute_command(
        client,
        sandbox.id,
        ExecuteParams("/bin/bash", ("-c", "for i in $(seq 1 300); do echo $i; done; echo e >&2")),
        AbortController().signal,
        lambda stream, text: logged.append(text) if stream == "stdout" else None,
        clock=sandbox.clock,
        capture_limit=8,
    )
    assert result.stdout == "299\n300\n"  # the last 8 characters
    assert result.stderr == "e\n"
    assert result.metadata["outputTruncated"] is True
    assert "".join(logged) == "".join(f"{i}\n" for i in range(1, 301))
