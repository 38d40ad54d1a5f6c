"""Account operations that run commands and move files: exec (buffered and streamed), files."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import functools
import traceback
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.models.base import AccountBase
from fake_server.models.errors import (
    BadRequest,
    InsufficientStorage,
    NotFound,
    PayloadTooLarge,
    at_capacity,
)
from fake_server.models.paths import check_abs_path
from fake_server.models.waiting import Wakeup, handed_off, wait_event

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

    from fake_server.models.sandbox import Sandbox
    from fake_server.runtime.api import Runner

__all__ = [
    "ExecError",
    "ExecExit",
    "ExecHeartbeat",
    "ExecOps",
    "ExecOutput",
    "ExecResult",
    "ExecSpec",
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


class ExecOps(AccountBase):
    """Account operations ``exec``, ``exec_stream``, ``upload_file``, ``download_file`` (mixed
    into ``Account``)."""

    def _prepare(self, sandbox_id: str, spec: ExecSpec) -> _Prepared:
        sandbox = self._running(sandbox_id)
        env = self._env(sandbox, dict(spec.env))
        cwd = self._check_cwd(sandbox, spec.cwd)
        stdin = spec.stdin.encode() if spec.stdin is not None else None
        self._room_for_a_command()
        return _Prepared(sandbox, [spec.cmd, *spec.args], cwd, env, stdin)

    async def _run(self, job: _Prepared, out: _Sink, err: _Sink) -> tuple[int, str]:
        """Exit status and error text (empty on a normal exit)."""
        shell = job.sandbox.machine.runner(self.ctx.clock)
        job.sandbox.execs += 1
        try:
            return await self._run_on(shell, job, out, err)
        finally:
            job.sandbox.execs -= 1
            job.sandbox.touch()  # idle time counts from the end of the exec

    async def _run_on(
        self, shell: Runner, job: _Prepared, out: _Sink, err: _Sink
    ) -> tuple[int, str]:
        from fake_server.runtime import CapacityError, CommandNotStarted, ProcessSignal

        with handed_off(self.ctx.clock) as bridge:
            try:
                code = await shell.run(
                    job.argv,
                    cwd=job.cwd,
                    env=job.env,
                    stdin=job.stdin,
                    on_stdout=out,
                    on_stderr=err,
                    started=bridge.release,
                    held_open=functools.partial(self._held_open, job.sandbox.id, None),
                )
            except ProcessSignal as exc:
                return 128 + _SIGNUMS.get(exc.signal, 9), f"command killed by {exc.signal}"
            except CommandNotStarted as exc:  # the result's error (TS ``ExecResult.error``)
                return exc.exit_code, exc.error
            except FileNotFoundError:
                return 1, "working directory does not exist"
            except CapacityError as exc:
                raise at_capacity(exc) from None
        return code, ""

    async def exec(self, sandbox_id: str, spec: ExecSpec) -> ExecResult:
        job = self._prepare(sandbox_id, spec)
        out, err = _Sink(), _Sink()
        start = self.ctx.clock.now()
        code, error = await self._run(job, out, err)
        exec_ms = round((self.ctx.clock.now() - start) * 1000, 3)
        return ExecResult(code, out.text(), err.text(), error, exec_ms)

    def exec_stream(self, sandbox_id: str, spec: ExecSpec) -> AsyncGenerator[ExecEvent, None]:
        """Validate now (errors become HTTP statuses), then stream events as they happen."""
        job = self._prepare(sandbox_id, spec)
        return self._stream(job)

    async def _stream(self, job: _Prepared) -> AsyncGenerator[ExecEvent, None]:
        events: deque[ExecEvent] = deque()
        clock = job.sandbox.machine.wait_clock(self.ctx.clock)  # real time for real programs
        state = {"changed": Wakeup(clock)}

        def push(event: ExecEvent) -> None:
            events.append(event)
            changed, state["changed"] = state["changed"], Wakeup(clock)
            changed.set()

        out = _Sink(lambda text: push(ExecOutput("stdout", text)))
        err = _Sink(lambda text: push(ExecOutput("stderr", text)))

        async def runner() -> None:
            try:
                code, error = await self._run(job, out, err)
            except Exception:
                # A bug in the fake or its runtime: end the stream with an error frame and
                # fail the test through ``fake.errors``.
                self.ctx.errors.append(("exec_stream", traceback.format_exc()))
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
                    if isinstance(event, ExecExit):
                        return
                if task.done():
                    return
                if not await wait_event(clock, changed, self.ctx.heartbeat_interval):
                    yield ExecHeartbeat()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def upload_file(self, sandbox_id: str, path: str, data: bytes) -> tuple[str, int]:
        sandbox = self._running(sandbox_id)
        target = check_abs_path(path)
        sandbox.bandwidth.received(len(data))
        try:
            sandbox.disk.write_file(target, data)
        except IsADirectoryError:
            raise BadRequest("is a directory", field="path") from None
        except (NotADirectoryError, FileExistsError):
            raise BadRequest("a parent is not a directory", field="path") from None
        except OSError as exc:
            from fake_server.runtime.environment import DISK_LIMIT, FILE_LIMIT

            if exc.errno == errno.EFBIG:
                message = f"file exceeds the fake sandbox's {FILE_LIMIT}-byte file limit"
                raise PayloadTooLarge(message, field="body") from None
            if exc.errno == errno.ENOSPC:
                message = (
                    f"the fake sandbox's {DISK_LIMIT}-byte disk is full"
                    if sandbox.machine.runtime == "bashkit"
                    else f"the sandbox's {sandbox.disk_mib} MiB disk is full"
                )
                raise InsufficientStorage(message) from None
            raise BadRequest("cannot be written", field="path") from None
        return target, len(data)

    def download_file(self, sandbox_id: str, path: str) -> bytes:
        sandbox = self._running(sandbox_id)
        target = check_abs_path(path)
        try:
            data = sandbox.disk.read_file(target)
        except IsADirectoryError:
            raise BadRequest("is a directory", field="path") from None
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound("file not found", code="file_not_found") from None
        except OSError:
            raise BadRequest("cannot be read", field="path") from None
        sandbox.bandwidth.sent(len(data))
        return data


_SIGNUMS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGKILL": 9, "SIGTERM": 15}


class _Sink:
    """Collects one output stream as text, decoding UTF-8 across chunk boundaries."""

    def __init__(self, emit: Callable[[str], None] | None = None) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []
        self._emit = emit

    async def __call__(self, data: bytes) -> None:
        self._push(self._decoder.decode(data))

    def _push(self, text: str) -> None:
        if not text:
            return
        if self._emit is None:
            self._parts.append(text)
        else:
            self._emit(text)

    def flush(self) -> None:
        self._push(self._decoder.decode(b"", final=True))

    def text(self) -> str:
        self.flush()
        return "".join(self._parts)
