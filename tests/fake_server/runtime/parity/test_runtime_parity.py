"""One API-level suite, both runtimes: exec, streams, processes, files, pause/resume, fork,
destroy and faults through the official SDK, against a fake on ``bashkit`` and on ``process``.

A runtime that behaves differently says so in docs/howto/process-runtime.md ("Differences"),
and the test names the difference: a strict xfail (the test fails the day the difference goes
away) or a branch asserting each runtime's documented behaviour. Nothing is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from createos.errors import APIError
from createos.models import (
    CreateSandboxRequest,
    ExecStreamEventType,
    ManagedProcessConnectEventType,
    ManagedProcessCreateRequest,
    ManagedProcessDeleteOptions,
    ManagedProcessSignal,
    ManagedProcessWaitOptions,
    RunCommandRequest,
    TemplateCreateRequest,
    TemplateStatus,
)

from fake_server.faults import CrashProcess, Fault
from fake_server.runtime.process import ProcessMachine
from tests._helpers import bashkit_differs, settled

if TYPE_CHECKING:
    from createos import Client
    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.reliability


def bash(box: SandboxInstance, script: str, **fields: object) -> tuple[int, str, str]:
    request = RunCommandRequest(command="/bin/bash", arguments=["-c", script], **fields)  # type: ignore[arg-type]
    result = box.run_command(request).result
    return result.exit_code, result.standard_output, result.standard_error


def start(box: SandboxInstance, script: str) -> str:
    request = ManagedProcessCreateRequest(command="/bin/bash", arguments=["-c", script])
    return box.processes.create(request).process_id


def output(box: SandboxInstance, process_id: str) -> tuple[bytes, int | None, str | None]:
    """Everything the process printed, then its exit code and signal (waits for the exit)."""
    with box.processes.connect(process_id) as frames:
        seen = [f for f in frames if f.type != ManagedProcessConnectEventType.HEARTBEAT]
    last = seen[-1]
    assert last.type == ManagedProcessConnectEventType.EXIT
    data = b"".join(f.data for f in seen[:-1])
    return data, last.exit_code, box.processes.get(process_id).signal


def test_exec_status_streams_env_stdin_and_identity(box: SandboxInstance) -> None:
    script = 'echo "$GREETING"; cat; echo oops >&2; cd /tmp && pwd; id -un; hostname; exit 3'
    got = bash(box, script, standard_input="piped\n", environment_variables={"GREETING": "hi"})
    assert got == (3, "hi\npiped\n/tmp\nroot\nsandbox\n", "oops\n")


def test_exec_of_a_missing_program_sets_the_result_s_error(box: SandboxInstance) -> None:
    """TS ``ExecResult.error`` ("the command could not be started"): the same on both."""
    result = box.run_command(RunCommandRequest(command="no-such-tool", arguments=["x"])).result
    assert (result.exit_code, result.standard_error) == (127, "")
    assert result.error_message == 'exec: "no-such-tool": executable file not found in $PATH'
    inner = bash(box, "no-such-tool x")  # a script's missing command is bash's line
    assert inner[0] == 127
    # bash names itself as it was started (``/bin/bash``); both say why.
    assert inner[2].endswith("bash: line 1: no-such-tool: command not found\n")


def test_exec_has_no_terminal(box: SandboxInstance) -> None:
    assert bash(box, "stty size") == (
        1,
        "",
        "stty: 'standard input': Inappropriate ioctl for device\n",
    )


def test_devices_read_in_full_or_the_script_fails(
    rt_fake: FakeCreateOS, box: SandboxInstance
) -> None:
    piped = "cat /dev/urandom | tr -dc a-z | head -c 100000 | wc -c"
    assert bash(box, piped) == (0, "100000\n", "")
    redirect = bash(box, "tr -dc a-z </dev/urandom | head -c 10000 | wc -c")
    if rt_fake.runtime == "process":
        assert redirect == (0, "10000\n", "")
    else:  # difference: bashkit reads a redirect itself, at most 8 KiB of /dev/urandom
        assert redirect == (
            1,
            "",
            "bash: /dev/urandom: a redirect reads at most 8 KiB of it in the fake's bashkit "
            "runtime; use cat /dev/urandom | ..., or the process runtime\n",
        )


def test_streamed_exec_keeps_each_stream_in_order(box: SandboxInstance) -> None:
    script = "for i in 1 2 3; do echo out$i; echo err$i >&2; done; exit 2"
    request = RunCommandRequest(command="/bin/bash", arguments=["-c", script])
    with box.stream_command(request) as stream:
        events = [(e.type, e.data or e.exit_code) for e in stream]
    stdout = "".join(str(d) for t, d in events if t == ExecStreamEventType.STDOUT)
    stderr = "".join(str(d) for t, d in events if t == ExecStreamEventType.STDERR)
    assert (stdout, stderr) == ("out1\nout2\nout3\n", "err1\nerr2\nerr3\n")
    assert events[-1] == (ExecStreamEventType.EXIT, 2)


def test_managed_process_reads_stdin_and_exits(box: SandboxInstance) -> None:
    process_id = start(box, "read -r line; echo got:$line; exit 5")
    box.processes.input(process_id, "first\n")
    box.processes.close_standard_input(process_id)
    assert output(box, process_id) == (b"got:first\n", 5, None)
    waited = box.processes.wait(process_id, ManagedProcessWaitOptions(wait_timeout=5))
    assert (waited.tree_exited, waited.exit_code) == (True, 5)
    assert [p.process_id for p in box.processes.list()] == [process_id]


@pytest.fixture(name="live_stdin")
def _live_stdin(rt_fake: FakeCreateOS, request: pytest.FixtureRequest) -> None:
    bashkit_differs(
        rt_fake, request, "bashkit hands stdin to a bash -c script only once it is closed"
    )


@pytest.mark.usefixtures("live_stdin")
def test_managed_process_reads_live_stdin_before_it_is_closed(box: SandboxInstance) -> None:
    process_id = start(box, "read -r line; echo got:$line; exit 5")
    box.processes.input(process_id, "first\n")
    try:
        waited = box.processes.wait(process_id, ManagedProcessWaitOptions(wait_timeout=10))
    finally:
        box.processes.close_standard_input(process_id)
    assert waited.exit_code == 5
    assert output(box, process_id) == (b"got:first\n", 5, None)


def test_a_signal_ends_a_process_with_that_signal(
    rt_fake: FakeCreateOS, box: SandboxInstance
) -> None:
    with rt_fake.clock.hold():  # the SDK's gaps must not let a bashkit `sleep 300` end
        process_id = start(box, "echo up; sleep 300")
        with box.processes.connect(process_id) as frames:
            assert next(f.data for f in frames if f.data) == b"up\n"
        box.processes.signal(process_id, ManagedProcessSignal.TERMINATE)
    assert output(box, process_id) == (b"up\n", None, "SIGTERM")


def test_a_signal_sent_at_once_after_create_is_not_lost(
    rt_fake: FakeCreateOS, box: SandboxInstance
) -> None:
    """Sent before the program may have started: it still ends it (never a 300 s sleep)."""
    with rt_fake.clock.hold():  # the SDK's gaps must not let a bashkit `sleep 300` end
        process_id = start(box, "sleep 300")
        box.processes.signal(process_id, ManagedProcessSignal.TERMINATE)
    assert output(box, process_id) == (b"", None, "SIGTERM")


@pytest.fixture(name="trap_honoured")
def _trap_honoured(rt_fake: FakeCreateOS, request: pytest.FixtureRequest) -> None:
    bashkit_differs(
        rt_fake, request, "bashkit ignores trap '' TERM (SIGTERM ends the process at once)"
    )


@pytest.mark.usefixtures("trap_honoured")
def test_kill_with_grace_kills_a_tree_that_ignores_sigterm(box: SandboxInstance) -> None:
    process_id = start(box, "trap '' TERM; echo armed; sleep 300 & wait")
    with box.processes.connect(process_id) as frames:
        assert next(f.data for f in frames if f.data) == b"armed\n"
    deleted = box.processes.delete(process_id, ManagedProcessDeleteOptions(grace_period=0.2))
    assert (deleted.tree_exited, deleted.signal) == (True, "SIGKILL")


def test_files_round_trip_between_the_api_and_programs(box: SandboxInstance) -> None:
    payload = bytes(range(256)) * 4096
    box.files.upload("/srv/data/blob.bin", payload)
    assert bash(box, "wc -c < /srv/data/blob.bin; echo made > /tmp/out.txt") == (
        0,
        f"{len(payload)}\n",
        "",
    )
    with box.files.download("/srv/data/blob.bin") as download:
        assert download.read() == payload
    with box.files.download("/tmp/out.txt") as download:
        assert download.read() == b"made\n"
    with pytest.raises(APIError) as missing:
        box.files.download("/tmp/none.txt").read()
    assert missing.value.status_code == 404


def test_pause_keeps_files_and_processes_and_resume_continues(
    rt_fake: FakeCreateOS, box: SandboxInstance
) -> None:
    box.files.upload("/tmp/kept.txt", b"kept\n")
    process_id = start(box, "read -r line; echo got:$line")
    box.pause()
    box.wait_until_paused()
    with pytest.raises(APIError) as paused:
        bash(box, "true")
    assert paused.value.status_code == 409
    machine = rt_fake.sandbox(box.id).machine
    if isinstance(machine, ProcessMachine):
        # Difference: the process runtime stops every process while paused (bashkit's keep
        # running; a client polling only after resume sees no difference).
        assert settled(lambda: _all_stopped(_tree(machine)))
    box.resume()
    box.wait_until_running()
    box.processes.input(process_id, "after\n")
    box.processes.close_standard_input(process_id)
    assert output(box, process_id) == (b"got:after\n", 0, None)
    assert bash(box, "cat /tmp/kept.txt") == (0, "kept\n", "")


def test_fork_copies_files_and_the_copies_are_independent(
    sdk: Client, box: SandboxInstance
) -> None:
    box.files.upload("/srv/a.txt", b"one\n")
    box.pause()
    box.wait_until_paused()
    fork = box.fork()
    fork.wait_until_running()
    box.resume()
    box.wait_until_running()
    assert bash(fork, "cat /srv/a.txt; echo two > /srv/a.txt") == (0, "one\n", "")
    assert bash(box, "cat /srv/a.txt") == (0, "one\n", "")
    assert bash(fork, "cat /srv/a.txt") == (0, "two\n", "")


def test_destroy_ends_every_process_and_removes_the_files(
    rt_fake: FakeCreateOS, box: SandboxInstance
) -> None:
    process_id = start(box, "sleep 300 & sleep 300 & wait")
    box.files.upload("/srv/x.txt", b"x")
    machine = rt_fake.sandbox(box.id).machine
    root = machine.directory if isinstance(machine, ProcessMachine) else None
    box.destroy()
    box.wait_until_destroyed()
    process = rt_fake.sandbox(box.id).processes[process_id]
    assert process.tree_exited
    assert machine.disk.wiped
    if root is not None:  # the process runtime's directory and processes are gone too
        assert not root.exists()
        assert settled(lambda: not machine.runs)


def test_a_crashed_process_reports_the_signal_and_its_tree_is_gone(
    rt_fake: FakeCreateOS, box: SandboxInstance
) -> None:
    with rt_fake.clock.hold():  # the SDK's gaps must not let a bashkit `sleep 300` end
        process_id = start(box, "echo up; sleep 300 & wait")
        with box.processes.connect(process_id) as frames:
            assert next(f.data for f in frames if f.data) == b"up\n"
        rt_fake.faults.add(Fault("get_process", CrashProcess(signal="SIGKILL")))
        crashed = box.processes.get(process_id)
    assert (crashed.tree_exited, crashed.signal) == (True, "SIGKILL")
    machine = rt_fake.sandbox(box.id).machine
    if isinstance(machine, ProcessMachine):
        assert settled(lambda: not machine.runs)
    assert bash(box, "echo still-serving") == (0, "still-serving\n", "")


def _tree(machine: ProcessMachine) -> list[int]:
    from fake_server.runtime.process.sandbox import tree

    levels = [level for run in machine.runs.values() for level in tree.descendants(run.pid)]
    return [pid for level in levels for pid in level]


def _all_stopped(pids: list[int]) -> bool:
    return bool(pids) and all(_stopped(pid) for pid in pids)


def _stopped(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] in (b"T", b"t")


TEMPLATE = """FROM devbox:1
ENV APP_HOME=/opt/app GREETING="hello there"
WORKDIR /opt/app
RUN echo v1 > version && mkdir -p logs \\
 && printf '#!/bin/bash\\necho ran in $PWD\\n' > run.sh && chmod 755 run.sh
"""


def test_a_template_is_a_working_rootfs(rt_fake: FakeCreateOS, sdk: Client) -> None:
    resources = rt_fake.world.ctx.resources
    resources.template_pending_seconds = resources.template_step_seconds = 0.0
    template = sdk.templates.create(TemplateCreateRequest(name="app", dockerfile=TEMPLATE))
    assert settled(lambda: sdk.templates.get(template.id).status is TemplateStatus.READY)
    box = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", rootfs="app"))
    box.wait_until_running()
    script = "cat version; echo $GREETING; test -d logs && echo dir; cd /tmp && /opt/app/run.sh"
    assert bash(box, f"cd /opt/app && {script}") == (0, "v1\nhello there\ndir\nran in /tmp\n", "")
