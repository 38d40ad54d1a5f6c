"""Run a command line inside a sandbox: a fresh bashkit interpreter over the sandbox's disk."""

from __future__ import annotations

import asyncio
import errno
import functools
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import bashkit

from fake_server.runtime import capacity
from fake_server.runtime.argv import check_argv, check_env, utf8
from fake_server.runtime.bashkit import adapters, braces, callctx, devices, vfs
from fake_server.runtime.bashkit.disk import IMAGE_COMMANDS
from fake_server.runtime.bashkit.gnu import endless, netclients
from fake_server.runtime.bashkit.gnu.cat import cat_command
from fake_server.runtime.bashkit.gnu.head import head_command
from fake_server.runtime.bashkit.gnu.realpath import realpath_command
from fake_server.runtime.bashkit.gnu.stty import stty_command, tty_command
from fake_server.runtime.bashkit.gnu.tar import tar_command
from fake_server.runtime.bashkit.gnu.timeout import timeout_command
from fake_server.runtime.bashkit.interactive import (
    argv_may_read_stdin,
    command_string,
    reads_commands_from_stdin,
    run_interactive,
)
from fake_server.runtime.bashkit.missing import DEFAULT_CHOICE, with_runtime_hint
from fake_server.runtime.bashkit.outputcut import cut_notice, cut_status
from fake_server.runtime.bashkit.primed import add_commands, primed
from fake_server.runtime.bashkit.runstate import RunState
from fake_server.runtime.bashkit.startcheck import StartCheck
from fake_server.runtime.environment import BASE_ENV, HOME
from fake_server.runtime.pipes import BytesSource, StdinPipe

if TYPE_CHECKING:
    from fake_server.clock import Clock
    from fake_server.runtime.bashkit.commands import CommandRegistry
    from fake_server.runtime.bashkit.disk import SandboxDisk
    from fake_server.runtime.pipes import StdinSource
    from fake_server.runtime.terminal import Terminal

__all__ = ["BashkitRunner", "Shell"]

Sink = Callable[[bytes], Awaitable[None]]


# bashkit appends hints ("Did you mean …", "Compilers … are not available") GNU bash never prints.
_HINT = re.compile(rb"(: command not found)[^\n]+")
#: bashkit's disk-limit errors, spelled as Linux's strerror (EFBIG, ENOSPC) for bash's messages.
_DISK_ERRORS = (
    (re.compile(rb"file too large: \d+ bytes exceeds \d+ byte limit"), b"File too large"),
    (
        re.compile(rb"filesystem full: \d+ bytes would exceed \d+ byte limit"),
        b"No space left on device",
    ),
)
#: The prefix of bashkit's fixed-limit errors, which it reports only in the result.
_LIMIT_ERROR = re.compile(
    r"^(resource limit exceeded: |execution error: )+(memory limit exceeded: )?"
)

# bashkit's default profile caps a run at 10,000 commands and 1 MiB of output; a sandbox
# process may run for the whole test session, so the limits are set far out of reach.
_LIMITS: dict[str, Any] = {
    "max_commands": 1_000_000_000,
    "max_loop_iterations": 1_000_000_000,
    "timeout_seconds": 10_000_000.0,
    "profile": bashkit.ExecutionProfile.Interactive,
}


class Shell:
    """Runs processes of one sandbox; every ``run()`` gets its own interpreter, all share the disk.

    Killing: run ``run()`` in a task and cancel it (SIGKILL semantics; ``CancelledError``
    propagates at once). For SIGTERM call ``deliver_sigterm(task)``.
    """

    def __init__(
        self,
        disk: SandboxDisk,
        clock: Clock,
        commands: CommandRegistry,
        *,
        egress: Callable[[], Sequence[str]] = tuple,
        process_choice: Callable[[], str] = lambda: DEFAULT_CHOICE,
    ) -> None:
        self._disk = disk
        #: How this fake's user chooses the process runtime, for ``command not found``.
        self._process_choice = process_choice
        self._clock = clock
        self._commands = commands
        #: The sandbox's egress rules now, for ``curl`` and ``wget`` (``runtime.netclients``).
        self._egress = egress
        self._runs: dict[asyncio.Task[Any], RunState] = {}
        commands.attach(disk)

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | StdinPipe | None = None,
        on_stdout: Sink,
        on_stderr: Sink,
        started: Callable[[], None] | None = None,
        terminal: Terminal | None = None,
        held_open: Callable[[str], None] | None = None,
    ) -> int:
        """Run ``argv`` to completion, streaming its output; returns the exit status (0..255).

        ``terminal`` is a PTY process's window (``stty size`` prints it). ``held_open`` is
        never called: a bashkit run's output ends with the run.

        ``started`` is called once the interpreter holds its busy token (or it never will, on
        an early error), so a caller can hand over its own token without a gap in which a
        virtual clock could jump.

        Raises ``FileNotFoundError`` before running anything when ``cwd`` is not a directory
        (``errno`` ``ENOENT`` or ``ENOTDIR``), ``ValueError``/``TypeError`` for an empty argv,
        non-strings or NUL bytes, ``RuntimeError`` when the disk was wiped,
        ``CapacityError`` when the process has no file descriptors left for an interpreter,
        and ``CommandNotStarted`` when ``argv[0]`` could not be started (``startcheck``).
        """
        once = _once(started)
        try:
            return await self._run(argv, cwd, env, stdin, on_stdout, on_stderr, once, terminal)
        finally:
            once()

    async def _run(
        self,
        argv: Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: bytes | StdinPipe | None,
        on_stdout: Sink,
        on_stderr: Sink,
        started: Callable[[], None],
        terminal: Terminal | None = None,
    ) -> int:
        args = check_argv(argv)
        workdir = self._workdir(cwd)
        environment = dict(BASE_ENV)
        environment.update(check_env(env or {}))
        self._commands.attach(self._disk)
        state = RunState(self._clock, self._disk)
        state.terminal = terminal
        task = asyncio.current_task()
        if task is not None:
            self._runs[task] = state
        unstarted = StartCheck(self._program(args[0], workdir), args[0], on_stderr)
        try:
            code = await self._execute(
                state, args, workdir, environment, stdin, on_stdout, unstarted, started
            )
        except Exception:
            await unstarted.flush()
            raise
        finally:
            if task is not None:
                self._runs.pop(task, None)
        await unstarted.settle(code)
        return code

    async def _execute(
        self,
        state: RunState,
        args: list[str],
        workdir: str,
        environment: dict[str, str],
        stdin: bytes | StdinPipe | None,
        on_stdout: Sink,
        on_stderr: Sink,
        started: Callable[[], None],
    ) -> int:
        bash = capacity.create(
            lambda: bashkit.Bash(
                username="root", hostname="sandbox", cwd=workdir, env=environment, **_LIMITS
            )
        )
        callctx.isolate()  # bashkit makes the helper it patches with the first Bash
        bash.mount("/", self._disk.fs)
        for point in sorted(self._disk.mounts, key=len):  # a folder before what nests in it
            bash.mount(point, self._disk.mounts[point])
        with state.interpreter(bash.cancel):
            return await self._drive(
                bash, state, args, workdir, stdin, on_stdout, on_stderr, started
            )

    async def _drive(
        self,
        bash: bashkit.Bash,
        state: RunState,
        args: list[str],
        workdir: str,
        stdin: bytes | StdinPipe | None,
        on_stdout: Sink,
        on_stderr: Sink,
        started: Callable[[], None],
    ) -> int:
        program = self._program(args[0], workdir)
        interactive = isinstance(stdin, StdinPipe) and reads_commands_from_stdin(program, args[1:])
        if isinstance(stdin, StdinPipe) and not stdin.closed and not interactive:
            resolve = functools.partial(self._stdin_name, workdir=workdir)
            if not argv_may_read_stdin(bash, [program, *args[1:]], resolve):
                stdin = None  # nothing would ever read it: start now, not at close

        async def filtered_stderr(data: bytes) -> None:
            if b"command not found" in data:
                data = _HINT.sub(rb"\1", data)
            if b"command not found" in data or b"No such file or directory" in data:
                data = with_runtime_hint(data, self._process_choice())
            if b" byte limit" in data:
                for pattern, text in _DISK_ERRORS:
                    data = pattern.sub(text, data)
            await on_stderr(data)

        stdout, stderr = state.track(on_stdout), state.track(filtered_stderr)
        # A registered command that *is* the process writes to the process's own sinks: one
        # 64 KiB write is one delivery, not sixteen 4 KiB hops through bashkit's threads.
        direct = (stdout, stderr) if self._commands.get(program) is not None else None
        self._install_commands(bash, state, None if interactive else stdin, program, direct)
        state.start()
        started()
        stdout, stderr = primed(stdout), primed(stderr)  # bashkit's from here on
        try:
            if isinstance(stdin, StdinPipe) and interactive:
                return await run_interactive(bash, state, stdin, stdout, stderr, on_stderr)
            line = " ".join(_quote(a) for a in [program, *args[1:]])
            script = command_string(args[1:]) if program in ("bash", "sh") else None
            cut = (braces.overflow(script) if script else None) or devices.capped_read(
                bash, script or line
            )
            if cut is not None:
                await on_stderr(cut.encode())
                return 1
            script = f"{adapters.STDIN_COMMAND} | {line}" if stdin is not None else line
            result = await bash.execute(script, stdout=stdout, stderr=stderr)
        except asyncio.CancelledError:
            state.kill()
            raise
        except (bashkit.BashError, RuntimeError):
            await on_stderr(b"bash: the interpreter failed\n")
            return 2
        finally:
            state.stop()
        if result.error and result.exit_code and _LIMIT_ERROR.search(result.error):
            # bashkit stops at its fixed expansion limits (measured in ``braces``) with
            # status 1 and the reason only in the result: say it.
            await on_stderr(f"bash: {_LIMIT_ERROR.sub('', result.error)}\n".encode())
        notice = cut_notice(result)
        if notice is not None:
            await on_stderr(notice)
        return cut_status(int(result.exit_code) & 0xFF, result)

    async def _spawn(
        self,
        state: RunState,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        stdin: bytes,
        out: Sink,
        err: Sink,
    ) -> int:
        """A child process of a custom command (``timeout``): its own interpreter, same disk."""
        return await self._execute(state, argv, cwd, env, stdin, out, err, _nothing)

    def sigterm_ignored(self, task: asyncio.Task[Any]) -> bool:
        """True while the process in ``task`` runs a registered command that ignores SIGTERM."""
        state = self._runs.get(task)
        return state is not None and state.ignores_sigterm

    def deliver_sigterm(self, task: asyncio.Task[Any]) -> bool:
        """SIGTERM: cancel ``task`` now and return True, or return False if it is ignored.

        On False the owner waits its grace period and then cancels the task (SIGKILL).
        """
        if self.sigterm_ignored(task):
            return False
        task.cancel()
        return True

    # -- internals ----------------------------------------------------------------------------

    def _workdir(self, cwd: str | None) -> str:
        workdir = HOME if cwd is None or cwd == "" else cwd
        if "\0" in workdir:
            raise ValueError("cwd must not contain NUL")
        workdir = vfs.abspath(utf8(workdir), HOME)
        if self._disk.is_dir(workdir):
            return workdir
        if self._disk.exists(workdir):
            raise FileNotFoundError(errno.ENOTDIR, "the working directory is not a directory")
        raise FileNotFoundError(errno.ENOENT, "the working directory does not exist")

    def _install_commands(
        self,
        bash: bashkit.Bash,
        state: RunState,
        stdin: bytes | StdinPipe | None,
        leader: str,
        direct: tuple[Sink, Sink] | None = None,
    ) -> None:
        commands: dict[str, adapters.CommandCallback] = {
            "sleep": adapters.sleep_command(state),
            "realpath": realpath_command(self._disk.fs),
            "tar": tar_command(self._disk.fs),
            "timeout": timeout_command(state, self._spawn),
            "seq": endless.seq_command,
            "yes": endless.yes_command,
            "curl": netclients.curl_command(self._egress),
            "wget": netclients.wget_command(self._egress, self._clock),
            "stty": stty_command(state.terminal),
            "tty": tty_command(state.terminal),
            "head": head_command,
            "cat": cat_command,
        }
        for command in self._commands.commands():
            sinks = direct if command.name == leader else None
            commands[command.name] = adapters.registered_command(state, command, sinks)
        if stdin is not None:
            source: StdinSource = stdin if isinstance(stdin, StdinPipe) else BytesSource(stdin)
            commands[adapters.STDIN_COMMAND] = adapters.stdin_command(state, source)
            if leader in commands:  # a custom command as the process: stdin ends with it
                commands[leader] = adapters.leader_command(state, commands[leader])
        add_commands(bash, commands)

    def _stdin_name(self, program: str, workdir: str) -> str:
        """The command ``program`` runs, as ``may_read_stdin`` judges it: a registered command
        (even one named ``echo``) is Python code that may read stdin."""
        name = self._program(program, workdir)
        return name if self._commands.get(name) is None else f"{name} (registered)"

    def _program(self, program: str, workdir: str) -> str:
        """An image path such as ``/bin/bash`` becomes the command itself.

        Running the command rather than its wrapper script keeps stdin streaming into
        registered commands, and ``$$``, ``exec`` and signals on the process itself.
        """
        if "/" in program:
            name = self._disk.image_command(vfs.abspath(program, workdir))
            if name is not None and (
                name in IMAGE_COMMANDS or self._commands.get(name) is not None
            ):
                return name
        return program


def _quote(word: str) -> str:
    """Single-quote ``word`` for bash (quoted command names are never keywords)."""
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _nothing() -> None:
    pass


def _once(func: Callable[[], None] | None) -> Callable[[], None]:
    """``func`` at most once, however often the result is called."""
    pending = [func] if func is not None else []

    def call() -> None:
        if pending:
            pending.pop()()

    return call


class BashkitRunner(Shell):
    """``Shell`` with the runner's signal hook: signals are emulated by cancelling the task."""

    def signal(self, task: asyncio.Task[Any], name: str, *, tree: bool) -> bool:
        return False
