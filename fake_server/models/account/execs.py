"""Account operations that run commands and move files: exec (buffered and streamed), files."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import traceback
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server import signals
from fake_server.models import exec_output
from fake_server.models.errors import (
    ApiError,
    BadRequest,
    InsufficientStorage,
    NotFound,
    PayloadTooLarge,
    at_capacity,
)
from fake_server.models.exec_output import Backlog, OutputSink, cut_notice
from fake_server.models.paths import check_abs_path
from fake_server.models.waiting import Wakeup, handed_off, wait_event
from fake_server.runtime.environment import DISK_LIMIT, FILE_LIMIT
from fake_server.runtime.files import FileDisk, NotRegularFile, open_source, open_target

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from fake_server.models.account.table import SandboxTable
    from fake_server.models.sandbox import Sandbox
    from fake_server.runtime.api import Runner
    from fake_server.runtime.files import Source

__all__ = [
    "ExecError",
    "ExecExit",
    "ExecHeartbeat",
    "ExecOutput",
    "ExecResult",
    "ExecSpec",
    "Execs",
]


@dataclass(frozen=True, slots=True)
class ExecSpec:
    cmd: str
    args: tuple[str, ...] = ()
    stdin: str | None = None
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    error: str
    exec_ms: float


@dataclass(frozen=True, slots=True)
class ExecOutput:
    stream: str
    text: str


@dataclass(frozen=True, slots=True)
class ExecHeartbeat:
    pass


@dataclass(frozen=True, slots=True)
class ExecExit:
    exit_code: int


@dataclass(frozen=True, slots=True)
class ExecError:
    message: str


ExecEvent = ExecOutput | ExecHeartbeat | ExecExit | ExecError


@dataclass(slots=True)
class _Prepared:
    sandbox: Sandbox
    argv: list[str]
    cwd: str | None
    env: dict[str, str]
    stdin: bytes | None


class Execs:
    """Commands and files of an account's sandboxes (``account.execs``): exec, buffered and
    streamed, upload and download. A service over the account's table."""

    def __init__(self, account: SandboxTable) -> None:
        self.account = account

    def _prepare(self, sandbox_id: str, spec: ExecSpec) -> _Prepared:
        sandbox = self.account.running(sandbox_id)
        env = self.account.env_for(sandbox, dict(spec.env))
        cwd = self.account.check_cwd(sandbox, spec.cwd)
        stdin = spec.stdin.encode() if spec.stdin is not None else None
        self.account.room_for_a_command()
        return _Prepared(sandbox, [spec.cmd, *spec.args], cwd, env, stdin)

    async def _run(self, job: _Prepared, out: OutputSink, err: OutputSink) -> tuple[int, str]:
        """Exit status and error text (empty on a normal exit)."""
        shell = job.sandbox.machine.runner(self.account.ctx.clock)
        job.sandbox.execs += 1
        try:
            return await self._run_on(shell, job, out, err)
        finally:
            job.sandbox.execs -= 1
            job.sandbox.touch()  # idle time counts from the end of the exec

    async def _run_on(
        self, shell: Runner, job: _Prepared, out: OutputSink, err: OutputSink
    ) -> tuple[int, str]:
        from fake_server.runtime import CapacityError, CommandNotStarted, ProcessSignal
        from fake_server.runtime.startfail import start_failure

        with handed_off(self.account.ctx.clock) as bridge:
            try:
                code = await shell.run(
                    job.argv,
                    cwd=job.cwd,
                    env=job.env,
                    stdin=job.stdin,
                    on_stdout=out,
                    on_stderr=err,
                    started=bridge.release,
                    held_open=functools.partial(self.account.held_open, job.sandbox.id, None),
                )
            except ProcessSignal as exc:
                return 128 + signals.NUMBERS.get(exc.signal, 9), f"command killed by {exc.signal}"
            except CommandNotStarted as exc:  # the result's error (TS ``ExecResult.error``)
                return exc.exit_code, exc.error
            except FileNotFoundError:
                return 1, "working directory does not exist"
            except CapacityError as exc:
                raise at_capacity(exc) from None
            except OSError as exc:
                if exc.errno != errno.E2BIG:
                    raise
                # Past the host's own limit (a stack limit below 8 MiB makes it smaller than
                # the one the API checks): the command could not start.
                failure = start_failure(job.argv[0], "Argument list too long")
                return failure.exit_code, failure.error
        return code, ""

    async def exec(self, sandbox_id: str, spec: ExecSpec) -> ExecResult:
        job = self._prepare(sandbox_id, spec)
        limit = exec_output.BUFFERED_LIMIT
        out, err = OutputSink(limit=limit), OutputSink(limit=limit)
        start = self.account.ctx.clock.now()
        code, error = await self._run(job, out, err)
        exec_ms = round((self.account.ctx.clock.now() - start) * 1000, 3)
        error = "; ".join(part for part in (error, cut_notice(out, err)) if part)
        return ExecResult(code, out.text(), err.text(), error, exec_ms)

    def exec_stream(self, sandbox_id: str, spec: ExecSpec) -> AsyncGenerator[ExecEvent, None]:
        """Validate now (errors become HTTP statuses), then stream events as they happen."""
        job = self._prepare(sandbox_id, spec)
        return self._stream(job)

    async def _stream(self, job: _Prepared) -> AsyncGenerator[ExecEvent, None]:
        events: deque[ExecEvent] = deque()
        clock = job.sandbox.machine.wait_clock(
            self.account.ctx.clock
        )  # real time for real programs
        state = {"changed": Wakeup(clock)}
        backlog = Backlog()

        def push(event: ExecEvent) -> None:
            if isinstance(event, ExecOutput):
                backlog.added(len(event.text))
            events.append(event)
            changed, state["changed"] = state["changed"], Wakeup(clock)
            changed.set()

        out = OutputSink(lambda text: push(ExecOutput("stdout", text)), backlog=backlog)
        err = OutputSink(lambda text: push(ExecOutput("stderr", text)), backlog=backlog)

        async def runner() -> None:
            try:
                code, error = await self._run(job, out, err)
            except Exception:
                # A bug in the fake or its runtime: end the stream with an error frame and
                # fail the test through ``fake.errors``.
                self.account.ctx.errors.append(("exec_stream", traceback.format_exc()))
                push(ExecError("internal error in the fake"))
                return
            out.flush()
            err.flush()
            if error:
                push(ExecError(error))
            push(ExecExit(code))

        task = asyncio.get_running_loop().create_task(runner())
        try:
            while True:
                changed = state["changed"]
                while events:
                    event = events.popleft()
                    yield event
                    if isinstance(event, ExecOutput):
                        backlog.taken(len(event.text))
                    if isinstance(event, ExecExit):
                        return
                if task.done():
                    return
                if not await wait_event(clock, changed, self.account.ctx.heartbeat_interval):
                    yield ExecHeartbeat()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def upload_file(
        self, sandbox_id: str, path: str, body: AsyncIterator[bytes], size: int | None = None
    ) -> tuple[str, int]:
        """Write ``body`` to ``path`` as it arrives; ``size``: the announced length, if any."""
        sandbox = self.account.running(sandbox_id)
        target = check_abs_path(path)
        held = not isinstance(sandbox.disk, FileDisk)  # in memory: one file at most FILE_LIMIT
        if held and size is not None and size > FILE_LIMIT:
            raise PayloadTooLarge(TOO_LARGE, field="body")
        received = 0
        try:
            file = open_target(sandbox.disk, target, FILE_LIMIT)
            try:
                async for chunk in body:
                    received += len(chunk)
                    await file.write(chunk)
                await file.finish()
            finally:
                file.close()
        except ConnectionError:
            raise
        except NotRegularFile as exc:
            raise BadRequest(exc.strerror or "is not a regular file", field="path") from None
        except IsADirectoryError:
            raise BadRequest("is a directory", field="path") from None
        except (NotADirectoryError, FileExistsError):
            raise BadRequest("a parent is not a directory", field="path") from None
        except OSError as exc:
            raise _write_error(sandbox, exc) from None
        finally:
            sandbox.bandwidth.received(received)
        return target, received

    def download_file(self, sandbox_id: str, path: str) -> Source:
        """The file, open for reading in chunks (the caller closes it)."""
        sandbox = self.account.running(sandbox_id)
        target = check_abs_path(path)
        try:
            source = open_source(sandbox.disk, target)
        except NotRegularFile as exc:
            raise BadRequest(exc.strerror or "is not a regular file", field="path") from None
        except IsADirectoryError:
            raise BadRequest("is a directory", field="path") from None
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound("file not found", code="file_not_found") from None
        except OSError:
            raise BadRequest("cannot be read", field="path") from None
        sandbox.bandwidth.sent(source.size)
        return source


#: What an upload past the in-memory disk's file limit answers (413).
TOO_LARGE = f"file exceeds the fake sandbox's {FILE_LIMIT}-byte file limit"


def _write_error(sandbox: Sandbox, exc: OSError) -> ApiError:
    if exc.errno == errno.EFBIG:
        return PayloadTooLarge(TOO_LARGE, field="body")
    if exc.errno == errno.ENOSPC:
        message = (
            f"the fake sandbox's {DISK_LIMIT}-byte disk is full"
            if sandbox.machine.runtime == "bashkit"
            else f"the sandbox's {sandbox.disk_mib} MiB disk is full"
        )
        return InsufficientStorage(message)
    return BadRequest("cannot be written", field="path")
