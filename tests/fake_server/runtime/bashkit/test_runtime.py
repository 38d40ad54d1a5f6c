"""The sandbox runtime: a real shell over each sandbox's disk, as the provider's scripts need it."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest

from fake_server.clock import VirtualClock
from fake_server.runtime import HOME, CommandNotStarted
from fake_server.runtime.bashkit import CommandIO, CommandRegistry, SandboxDisk, Shell

if TYPE_CHECKING:
    from collections.abc import Callable

    from _runtime_box import Box


async def _drop(data: bytes) -> None:
    return None


def q(value: str) -> str:
    """The provider's quoting: single quotes, each ' as '"'"'."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


# -- image and absolute paths -----------------------------------------------------------------


@pytest.mark.asyncio
async def test_absolute_command_paths_run_the_image_commands(box: Box) -> None:
    box.disk.write_file("/tmp/in.txt", b"marker")

    assert (await box.run(["/bin/cat", "/tmp/in.txt"])).stdout == "marker"
    assert (await box.run(["/bin/echo", "a b", "c"])).stdout == "a b c\n"
    made = await box.run(["/bin/mkdir", "-p", "--", "/w/deep/er"])
    assert made.code == 0
    assert box.disk.is_dir("/w/deep/er")
    removed = await box.run(["/bin/rm", "-f", "--", "/tmp/in.txt", "/tmp/never-existed"])
    assert (removed.code, removed.stderr) == (0, "")
    assert not box.disk.exists("/tmp/in.txt")
    env = await box.run(["/usr/bin/env", "X=1", "/bin/bash", "-c", 'echo "$X" "$HOME"'])
    assert env.stdout == f"1 {HOME}\n"
    inner = await box.sh("/bin/echo one; /usr/bin/printf '%s\\n' two; /bin/sh -c 'echo three'")
    assert inner.stdout == "one\ntwo\nthree\n"


@pytest.mark.asyncio
async def test_image_has_home_tmp_and_os_release(box: Box) -> None:
    result = await box.sh('echo "$HOME"; pwd; test -d /tmp && test -d /root && echo dirs')
    assert result.stdout == f"{HOME}\n{HOME}\ndirs\n"
    assert box.disk.read_file("/etc/os-release").startswith(b'PRETTY_NAME="CreateOS fake')


@pytest.mark.asyncio
async def test_a_program_that_cannot_start_raises_command_not_started(box: Box) -> None:
    """The exec's ``error``, not bash's line (TS ``ExecResult.error``: "the command could not
    be started"). A program the host has (the process runtime would run it) gets how to get
    there; a name the host lacks too gets the plain error; a script's own missing command
    stays bash's line on stderr."""
    with pytest.raises(CommandNotStarted) as missing:
        await box.run(["node", "-v"])
    assert (missing.value.exit_code, missing.value.error) == (
        127,
        'exec: "node": executable file not found in $PATH (the bashkit runtime has no node; '
        'run real programs with the process runtime: FakeCreateOS(runtime="process"))',
    )
    with pytest.raises(CommandNotStarted) as typo:
        await box.run(["no-such-tool-here"])
    assert (typo.value.exit_code, typo.value.error) == (
        127,
        'exec: "no-such-tool-here": executable file not found in $PATH',
    )
    with pytest.raises(CommandNotStarted) as directory:
        await box.run(["/tmp"])
    assert (directory.value.exit_code, directory.value.error) == (
        126,
        "fork/exec /tmp: permission denied",
    )
    inner = await box.run(["bash", "-c", "no-such-tool-here"])
    assert (inner.code, inner.stderr) == (
        127,
        "bash: line 1: no-such-tool-here: command not found\n",
    )


@pytest.mark.asyncio
async def test_bad_input_is_rejected_or_repaired_without_running(box: Box) -> None:
    with pytest.raises(ValueError, match="argv must name a command"):
        await box.run([])
    with pytest.raises(ValueError, match="argv must not contain NUL"):
        await box.run(["echo", "a\0b"])
    with pytest.raises(ValueError, match="environment keys must be non-empty without '=' or NUL"):
        await box.run(["true"], env={"A=B": "1"})
    repaired = await box.run(["/bin/echo", "x\udcffy"], env={"V": "\udcff"})
    assert repaired.stdout == "x\ufffdy\n"
    box.disk.write_file("/tmp/\udcff", b"odd name")
    assert box.disk.read_file("/tmp/\ufffd") == b"odd name"


# -- the provider's scripts -------------------------------------------------------------------


@pytest.mark.asyncio
async def test_provider_wrapper_script_runs_exactly_as_on_linux(box: Box) -> None:
    box.disk.write_file("/w/keep", b"")
    box.disk.write_file("/tmp/in", b"line one\nline two\n")
    script = (
        f"cd -- {q('/w')} || exit\n"
        f"exec env  X={q(chr(39).join(['a', 'b']))} {q('/bin/echo')} {q('x')} < {q('/tmp/in')}"
    )
    assert script == "cd -- '/w' || exit\nexec env  X='a'\"'\"'b' '/bin/echo' 'x' < '/tmp/in'"
    plain = await box.run(["/bin/bash", "-lc", script])
    assert (plain.code, plain.stdout, plain.stderr) == (0, "x\n", "")

    inner = 'echo "$X|$(pwd)"; cat'
    showing = (
        f"cd -- {q('/w')} || exit\n"
        f"exec env  X={q('a' + chr(39) + 'b $(touch /bad)')} {q('/bin/bash')} {q('-c')} "
        f"{q(inner)} < {q('/tmp/in')}\necho notreached"
    )
    shown = await box.run(["/bin/bash", "-lc", showing])
    assert (shown.code, shown.stderr) == (0, "")
    assert shown.stdout == "a'b $(touch /bad)|/w\nline one\nline two\n"
    assert not box.disk.exists("/bad")


@pytest.mark.asyncio
async def test_wrapper_script_with_missing_directory_exits_1(box: Box) -> None:
    result = await box.run(["/bin/bash", "-lc", "cd -- '/gone' || exit\nexec env  '/bin/echo' x"])
    assert result.code == 1
    assert result.stdout == ""
    assert result.stderr == "bash: line 1: cd: /gone: No such file or directory\n"


@pytest.mark.asyncio
async def test_exec_replaces_the_shell_and_keeps_the_exit_status(box: Box) -> None:
    result = await box.sh("exec env A=1 /bin/bash -c 'echo $A; exit 7'; echo notreached")
    assert (result.code, result.stdout) == (7, "1\n")


# -- sleep and the clock ----------------------------------------------------------------------


@pytest.mark.asyncio
async def test_sleep_runs_on_the_virtual_clock(box: Box) -> None:
    start_virtual = box.clock.now()
    result = await box.sh("sleep 30; sleep 1.5 0.5s; sleep 2m")
    assert result.code == 0
    # Fake seconds only; the real cost is measured in benchmarks/bench_clock.py.
    assert box.clock.now() - start_virtual == pytest.approx(152.0)


@pytest.mark.asyncio
async def test_sleep_rejects_bad_intervals(box: Box) -> None:
    result = await box.sh("sleep soon")
    assert result.code == 1
    assert result.stderr == (
        "sleep: invalid time interval 'soon'\nTry 'sleep --help' for more information.\n"
    )
    missing = await box.sh("sleep")
    assert missing.stderr == "sleep: missing operand\nTry 'sleep --help' for more information.\n"


@pytest.mark.asyncio
async def test_output_streams_before_a_sleep_ends(box: Box) -> None:
    result = await box.sh("echo before; sleep 5; echo after")
    stamps = [(data, now) for stream, now, data in result.chunks if stream == "out"]
    assert stamps == [(b"before\n", 0.0), (b"after\n", 5.0)]


@pytest.mark.asyncio
async def test_timeout_runs_on_the_virtual_clock(box: Box) -> None:
    timed_out = await box.sh(
        "timeout 1 bash -c 'echo 1 > /tmp/t; sleep 5; echo 2 > /tmp/t'; echo rc=$?; sleep 10"
    )
    assert timed_out.stdout == "rc=124\n"
    assert box.clock.now() == pytest.approx(11.0)
    assert box.disk.read_file("/tmp/t") == b"1\n"
    finished = await box.sh("echo in | timeout 10 bash -c 'cat; sleep 2; exit 3'; echo rc=$?")
    assert finished.stdout == "in\nrc=3\n"
    assert box.clock.now() == pytest.approx(13.0)
    killed = await box.sh("timeout -s KILL 1 sleep 5; echo $?; timeout --preserve-status 1 sleep 5")
    assert (killed.code, killed.stdout) == (143, "137\n")


async def _until(condition: Callable[[], bool]) -> None:
    """Yield to the loop until ``condition`` holds (the interpreter works on other threads)."""
    deadline = time.perf_counter() + 5.0
    while not condition():
        assert time.perf_counter() < deadline, "condition never became true"
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_cancelling_mid_sleep_kills_at_once_and_keeps_the_disk() -> None:
    clock = VirtualClock(autojump=False)
    disk = SandboxDisk()
    shell = Shell(disk, clock, CommandRegistry())
    seen: list[bytes] = []

    async def out(data: bytes) -> None:
        seen.append(data)

    task = asyncio.create_task(
        shell.run(
            [
                "/bin/bash",
                "-c",
                "echo 1 > /tmp/state; echo started; sleep 1000; echo 2 > /tmp/state",
            ],
            on_stdout=out,
            on_stderr=out,
        )
    )
    await _until(lambda: clock.next_deadline() is not None and bool(seen))
    assert shell.deliver_sigterm(task) is True
    # Autojump is off: a run that ignored the signal would wait out its sleep forever. The
    # real-time bound only turns that into a failure; the speed is in benchmarks/bench_clock.py.
    done, _ = await asyncio.wait([task], timeout=30)
    assert done == {task}, "SIGTERM did not end a shell sleeping on the clock"
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [b"started\n"]
    assert disk.read_file("/tmp/state") == b"1\n"
    assert clock.now() == 0.0
    again = await Shell(disk, clock, CommandRegistry()).run(
        ["cat", "/tmp/state"], on_stdout=out, on_stderr=out
    )
    assert again == 0
    assert seen[-1] == b"1\n"
    clock.close()


# -- registered commands ----------------------------------------------------------------------


@pytest.mark.asyncio
async def test_registered_command_gets_argv_env_cwd_stdin_and_sets_the_status(box: Box) -> None:
    calls: list[CommandIO] = []

    async def node(cmd: CommandIO) -> int:
        calls.append(cmd)
        data = await cmd.read_stdin()
        await cmd.write_stdout(b"got:" + data.upper())
        await cmd.write_stderr(b"warning\n")
        return 3

    box.commands.register("node", node)
    result = await box.sh("cd /tmp && printf abc | FOO=bar /usr/bin/node -e 'x y'; echo status=$?")
    assert result.stdout == "got:ABCstatus=3\n"
    assert result.stderr == "warning\n"
    assert calls[0].argv == ["node", "-e", "x y"]
    assert calls[0].env["FOO"] == "bar"
    assert calls[0].cwd == "/tmp"
    assert calls[0].disk is box.disk

    direct = await box.run(["node", "--version"], stdin=b"piped")
    assert (direct.code, direct.stdout) == (3, "got:PIPED")


@pytest.mark.asyncio
async def test_sync_registered_command_and_unregister(box: Box) -> None:
    def git(cmd: CommandIO) -> int:
        cmd.stdout_buffer += b"git " + b" ".join(a.encode() for a in cmd.argv[1:]) + b"\n"
        cmd.stdout_buffer += cmd.stdin_data
        return 0

    box.commands.register("git", git)
    assert box.commands.names() == ["git"]
    assert box.disk.is_file("/usr/bin/git")
    result = await box.run(["/usr/bin/git", "status"], stdin=b"in\n")
    assert (result.code, result.stdout) == (0, "git status\nin\n")

    box.commands.unregister("git")
    assert not box.disk.exists("/usr/bin/git")
    with pytest.raises(CommandNotStarted) as gone:
        await box.run(["git"])
    assert gone.value.exit_code == 127


@pytest.mark.asyncio
async def test_registering_an_image_command_overrides_it_until_unregistered(box: Box) -> None:
    box.commands.register("sed", lambda cmd: 42)
    assert (await box.run(["/bin/sed", "-n", "p"])).code == 42
    box.commands.unregister("sed")
    restored = await box.run(["/bin/sed", "s/a/b/"], stdin=b"a\n")
    assert (restored.code, restored.stdout) == (0, "b\n")


@pytest.mark.asyncio
async def test_registered_command_that_raises_reports_on_stderr(box: Box) -> None:
    async def broken(cmd: CommandIO) -> int:
        raise LookupError("no such ref")

    box.commands.register("broken", broken)
    result = await box.run(["broken"])
    assert (result.code, result.stderr) == (1, "broken: LookupError: no such ref\n")


@pytest.mark.asyncio
async def test_sigterm_is_ignored_only_inside_an_ignoring_command() -> None:
    clock = VirtualClock(autojump=False)
    disk = SandboxDisk()
    commands = CommandRegistry()
    entered = asyncio.Event()

    async def daemon(cmd: CommandIO) -> int:
        entered.set()
        await cmd.clock.sleep(10_000)
        return 0

    commands.register("daemon", daemon, ignores_sigterm=True)
    shell = Shell(disk, clock, commands)

    async def drop(data: bytes) -> None:
        return None

    task = asyncio.create_task(shell.run(["daemon"], on_stdout=drop, on_stderr=drop))
    await entered.wait()
    assert shell.sigterm_ignored(task) is True
    assert shell.deliver_sigterm(task) is False
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert shell.sigterm_ignored(task) is False
    clock.close()


# -- disk -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_disk_survives_between_interpreters(box: Box) -> None:
    await box.sh("mkdir -p /w && echo kept > /w/f && ln -s f /w/l")
    other = Shell(box.disk, box.clock, box.commands)
    out: list[bytes] = []

    async def collect(data: bytes) -> None:
        out.append(data)

    assert await other.run(["cat", "/w/l"], on_stdout=collect, on_stderr=collect) == 0
    assert out == [b"kept\n"]
    assert box.disk.read_file("/w/l") == b"kept\n"


def test_disk_file_api_errors_and_symlinks() -> None:
    disk = SandboxDisk()
    disk.write_file("/a/b/c.txt", b"123", mode=0o600)
    assert disk.read_file("/a/b/c.txt") == b"123"
    assert disk.mode("/a/b/c.txt") == 0o600
    assert disk.is_dir("/a/b")
    assert disk.is_file("/a/b/c.txt")
    disk.fs.symlink("b", "/a/rel")
    assert disk.read_file("/a/rel/c.txt") == b"123"
    disk.write_file("/a/rel/d.txt", b"via link")
    assert disk.read_file("/a/b/d.txt") == b"via link"
    with pytest.raises(FileNotFoundError):
        disk.read_file("/a/nope")
    with pytest.raises(IsADirectoryError):
        disk.read_file("/a/b")
    with pytest.raises(IsADirectoryError):
        disk.write_file("/a/b", b"x")
    with pytest.raises(NotADirectoryError):
        disk.write_file("/a/b/c.txt/x", b"x")
    before = disk.used_bytes()
    disk.remove("/a/rel")
    assert disk.is_dir("/a/b")
    disk.remove("/a")
    assert not disk.exists("/a")
    assert disk.used_bytes() == before - 3 - 8


@pytest.mark.asyncio
async def test_wiped_disk_refuses_everything(box: Box) -> None:
    box.disk.write_file("/w/f", b"x")
    box.disk.wipe()
    assert box.disk.wiped
    with pytest.raises(RuntimeError, match="wiped"):
        box.disk.read_file("/w/f")
    with pytest.raises(RuntimeError, match="wiped"):
        await box.run(["true"])
    box.commands.register("node", lambda cmd: 0)
    with pytest.raises(RuntimeError, match="wiped"):
        await Shell(box.disk, box.clock, box.commands).run(
            ["node"], on_stdout=_drop, on_stderr=_drop
        )
    assert box.disk.fs.read_dir("/") == []


@pytest.mark.asyncio
async def test_missing_cwd_raises_before_running_anything(box: Box) -> None:
    ran: list[str] = []

    def probe(cmd: CommandIO) -> int:
        ran.append(cmd.cwd)
        return 0

    box.commands.register("probe", probe)
    with pytest.raises(FileNotFoundError, match="the working directory does not exist"):
        await box.run(["probe"], cwd="/nowhere")
    box.disk.write_file("/file", b"")
    with pytest.raises(FileNotFoundError, match="the working directory is not a directory"):
        await box.run(["probe"], cwd="/file")
    assert ran == []
    assert (await box.run(["probe"], cwd="/tmp")).code == 0
    assert ran == ["/tmp"]
