"""Run one command as a CreateOS managed process and follow its output.

The behaviour is described in docs/provider-execution.md#running-a-command.

``execute_command`` is what the facade calls inside its tracked-call machinery:

1. build the wrapper script (bad input fails here, before any request);
2. stage stdin as a file (``PUT /files``) -- never in the script, never via ``/input``;
3. ``POST /processes`` with ``/bin/bash -lc <script>`` (no ``env``: the API only takes keys
   declared at sandbox creation). From the moment the request is sent until a valid
   ``process_id`` comes back, creation is *ambiguous* unless the API answered < 500;
4. ``POST …/stdin/close`` (409 means already closed);
5. follow ``GET …/connect?after=<cursor>`` until an ``exit`` frame, deduplicating replayed
   frames, failing closed on gaps and bad frames, and reconnecting at most three times in all
   (one counter shared by connect failures and streams that end without an exit).

Whatever happens, a process that did not finish is killed (``DELETE …?grace_ms=1000``, which
must report ``tree_exited: true`` or 404) and the stdin file is removed, both under a *fresh*
deadline: the command's own signal may be the very thing that fired. A timeout returns the
output received so far; host cancellation raises "CreateOS command was cancelled.".
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._client import StreamReadError, identifier
from ._errors import (
    ConnectionFailedError,
    CreateosApiError,
    CreateosCleanupError,
    CreateosError,
)
from ._output import (
    EVICTED,
    MAX_CAPTURE_CHARS,
    SEQUENCE_GAP,
    DataFrame,
    ErrorFrame,
    ExitFrame,
    LineSplitter,
    ProcessOutput,
    decode_data,
    error_for,
    parse_frame,
)
from ._script import NOT_A_STRING, build_wrapper_script
from ._signal import OperationTimeout, deadline_signal
from ._types import ExecuteResult

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ._client import CreateosClient
    from ._clock import Clock
    from ._signal import AbortSignal
    from ._types import ExecuteParams, LogSink

__all__ = ["execute_command"]

CREATION_UNCONFIRMED = (
    "CreateOS process creation could not be confirmed; destroy the lease before reusing it."
)
CLEANUP_FAILED = "CreateOS command cleanup failed; process termination is unconfirmed."
CANCELLED = "CreateOS command was cancelled."
CONNECT_FAILED = "CreateOS process output connection failed."
ENDED_WITHOUT_EXIT = "CreateOS process stream ended without an exit status."

MAX_RECONNECTS = 3
RECONNECT_DELAY = 0.25
KILL_GRACE_MS = 1000
STDIN_PREFIX = "/tmp/paperclip-stdin-"


@dataclass(slots=True)
class _Progress:
    """What the cleanup needs to know about how far the command got."""

    staged: bool = False
    creation_ambiguous: bool = False
    process_id: str | None = None
    completed: bool = False


@dataclass(slots=True)
class _Command:
    """One ``execute_command`` call: where it runs, what it runs, and what it has seen so far."""

    client: CreateosClient
    sandbox_id: str
    params: ExecuteParams
    script: str
    stdin_path: str | None
    signal: AbortSignal
    clock: Clock
    output: ProcessOutput
    progress: _Progress


async def execute_command(
    client: CreateosClient,
    lease_id: object,
    params: ExecuteParams,
    signal: AbortSignal,
    log: LogSink | None = None,
    *,
    clock: Clock | None = None,
    timeout_ms_cleanup: int | None = None,
    capture_limit: int = MAX_CAPTURE_CHARS,
) -> ExecuteResult:
    """Run ``params`` in sandbox ``lease_id`` until it exits, times out or is cancelled.

    ``signal`` is the command's work signal: aborting it with ``OperationTimeout`` yields a
    ``timed_out`` result with partial output; any other reason raises "CreateOS command was
    cancelled.". ``log(stream, text)`` receives output as it arrives. Cleanup requests use a
    fresh ``timeout_ms_cleanup`` deadline (default: the client's config ``timeoutMs``).
    ``capture_limit`` is the per-stream character cap (a knob for tests).

    Raises ``CreateosCleanupError`` when the process may exist but could not be confirmed
    created or terminated: the caller must then treat the lease as needing destroy.
    """
    sandbox_id = identifier(lease_id)
    if params.stdin is not None and not isinstance(params.stdin, str):
        raise CreateosError(NOT_A_STRING)
    stdin_path = f"{STDIN_PREFIX}{uuid.uuid4()}" if params.stdin is not None else None
    script = build_wrapper_script(
        params.command, params.args, cwd=params.cwd, env=params.env, stdin_path=stdin_path
    )
    clock = clock if clock is not None else client.clock
    progress = _Progress()
    output = ProcessOutput(log, cap=capture_limit)
    command = _Command(
        client, sandbox_id, params, script, stdin_path, signal, clock, output, progress
    )
    try:
        try:
            with signal.scope():
                exit_frame = await _run(command)
                await output.flush()
            return _result(output, progress, exit_frame)
        except Exception:
            if progress.creation_ambiguous and progress.process_id is None:
                raise CreateosCleanupError(CREATION_UNCONFIRMED) from None
            if signal.aborted and isinstance(signal.reason, OperationTimeout):
                await output.flush()
                return _result(output, progress, None)
            if signal.aborted:
                raise CreateosError(CANCELLED) from None
            raise
    finally:
        cleanup_ms = timeout_ms_cleanup if timeout_ms_cleanup is not None else client.timeout_ms
        await _cleanup(command, cleanup_ms)


def _result(output: ProcessOutput, progress: _Progress, frame: ExitFrame | None) -> ExecuteResult:
    return ExecuteResult(
        exit_code=frame.exit_code if frame is not None else None,
        signal=frame.signal if frame is not None else None,
        timed_out=frame is None,
        stdout=output.stdout.text,
        stderr=output.stderr.text,
        metadata={"processId": progress.process_id, "outputTruncated": output.truncated},
    )


async def _run(command: _Command) -> ExitFrame:
    """Stage stdin, create the process, close its stdin and follow its output to the exit."""
    client, sandbox_id, params = command.client, command.sandbox_id, command.params
    signal, progress, stdin_path = command.signal, command.progress, command.stdin_path
    if stdin_path is not None and params.stdin is not None:
        progress.staged = True  # set first: a PUT that fails midway may still leave a file
        payload = _utf8(params.stdin)
        await client.upload(sandbox_id, stdin_path, payload, signal=signal)
    body: dict[str, object] = {"cmd": "/bin/bash", "args": ["-lc", command.script]}
    if params.cwd:
        body["cwd"] = params.cwd
    progress.creation_ambiguous = True
    try:
        created = await client.request_json(
            "POST", f"/sandboxes/{sandbox_id}/processes", body=body, signal=signal
        )
    except CreateosApiError as error:
        if error.status < 500:
            progress.creation_ambiguous = False  # the API definitely refused it
        raise
    process_id = identifier(created.get("process_id"))  # invalid: still ambiguous
    progress.process_id = process_id
    base = f"/sandboxes/{sandbox_id}/processes/{process_id}"
    try:
        await client.request_json("POST", f"{base}/stdin/close", signal=signal)
    except CreateosApiError as error:
        if error.status != 409:
            raise
    exit_frame = await _Follower(client, base, signal, command.output, command.clock).follow()
    progress.completed = True  # the tree exited: nothing left to kill
    return exit_frame


def _utf8(text: str) -> bytes:
    """UTF-8 as JavaScript's TextEncoder does it: a lone surrogate becomes U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return fixed.encode("utf-8")


class _Follower:
    """Reads ``/connect`` frames from the cursor on, reconnecting a bounded number of times."""

    def __init__(
        self,
        client: CreateosClient,
        base: str,
        signal: AbortSignal,
        output: ProcessOutput,
        clock: Clock,
    ) -> None:
        self._client = client
        self._clock = clock
        self._base = base
        self._signal = signal
        self._output = output
        self._cursor = 0
        self._reconnects = 0  # shared by every kind of retry, never reset

    async def follow(self) -> ExitFrame:
        while True:
            self._signal.raise_if_aborted()
            connected = False
            try:
                async with self._client.stream(
                    "GET", f"{self._base}/connect?after={self._cursor}", signal=self._signal
                ) as chunks:
                    connected = True
                    frame = await self._read(chunks)
                if frame is not None:
                    return frame
            except StreamReadError:
                # The body broke mid-stream: not cancellation, resume from the same cursor.
                self._signal.raise_if_aborted()
            except CreateosApiError as error:
                if error.status == 410:
                    raise CreateosError(EVICTED) from None
                self._signal.raise_if_aborted()
                if error.status < 500 and error.status != 429:
                    raise
                await self._retry(CONNECT_FAILED)
                continue
            except CreateosError as error:
                self._signal.raise_if_aborted()
                if connected or not isinstance(error, ConnectionFailedError):
                    raise
                await self._retry(CONNECT_FAILED)
                continue
            await self._retry(ENDED_WITHOUT_EXIT)

    async def _retry(self, message: str) -> None:
        self._reconnects += 1
        if self._reconnects > MAX_RECONNECTS:
            raise CreateosError(message)
        await self._signal.sleep(self._clock, RECONNECT_DELAY)

    async def _read(self, chunks: AsyncIterator[str]) -> ExitFrame | None:
        """Handle one connection's frames; the exit frame, or None at end of stream."""
        splitter = LineSplitter()
        async for text in chunks:
            for line in splitter.feed(text):
                frame = await self._handle(line)
                if frame is not None:
                    return frame
        for line in splitter.finish():
            frame = await self._handle(line)
            if frame is not None:
                return frame
        return None

    async def _handle(self, line: str) -> ExitFrame | None:
        frame = parse_frame(line)
        if isinstance(frame, ExitFrame):
            return frame
        if isinstance(frame, ErrorFrame):
            raise error_for(frame)
        if isinstance(frame, DataFrame):
            if frame.seq <= self._cursor:
                return None  # replayed after a reconnect: already delivered
            if frame.seq != self._cursor + 1:
                raise CreateosError(SEQUENCE_GAP)
            stream, data = decode_data(frame)
            await self._output.append(stream, data)
            self._cursor = frame.seq
        return None


async def _cleanup(command: _Command, timeout_ms: int) -> None:
    """Kill an unfinished process tree and remove the stdin file, under a fresh deadline."""
    client, sandbox_id, clock = command.client, command.sandbox_id, command.clock
    progress, stdin_path = command.progress, command.stdin_path
    kill = progress.process_id is not None and not progress.completed
    if not kill and not progress.staged:
        return
    failure: CreateosCleanupError | None = None
    async with deadline_signal(clock, timeout_ms / 1000) as fresh:
        if kill:
            path = f"/sandboxes/{sandbox_id}/processes/{progress.process_id}"
            try:
                data = await client.request_json(
                    "DELETE", f"{path}?grace_ms={KILL_GRACE_MS}", signal=fresh
                )
                confirmed = data.get("tree_exited") is True
            except CreateosApiError as error:
                confirmed = error.status == 404  # already gone
            except Exception:
                confirmed = False
            if not confirmed:
                failure = CreateosCleanupError(CLEANUP_FAILED)
        if progress.staged and stdin_path is not None:
            # /files has no delete verb; a leftover file is harmless, so failures are ignored.
            with contextlib.suppress(Exception):
                await client.request_json(
                    "POST",
                    f"/sandboxes/{sandbox_id}/exec",
                    body={"cmd": "/bin/rm", "args": ["-f", "--", stdin_path]},
                    signal=fresh,
                )
    if failure is not None:
        raise failure
