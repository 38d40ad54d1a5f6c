"""File sync between the host and ``/paperclip-workspace`` in the sandbox.

The behaviour is described in docs/provider-execution.md#file-sync.

``sync_files`` validates the *whole* batch before any side effect, then runs operations and
their mappings in order:

* inbound file: PUT the bytes to a scratch path, then (guarded) ``mkdir -p`` + ``chmod`` +
  ``mv -f`` onto the target;
* inbound directory: a tar built on the host (links kept as links; ``follow_symlinks`` is
  refused as upstream does), PUT, then (guarded) ``tar -xf`` into the target;
* outbound file: (guarded) ``cp`` to scratch, GET into a host temp file next to the target,
  exact mode, ``rename`` -- an existing target is never replaced by a partial download;
* outbound directory: (guarded) ``tar -cf`` to scratch, GET (ended early once the archive
  declares more than the extraction limit or runs on past its end), validate every entry,
  then extract.

Every remote step is a ``/bin/bash -c`` script run through ``execute_command`` and starts with
the *guard*, which re-resolves the target with ``realpath`` inside the sandbox right before use,
so a symlink planted in the workspace cannot redirect a write outside it. Post-upload commands
run in order after an inbound operation and stop at the first failure. Host temp dirs and the
sandbox scratch file are removed after each mapping, whatever happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import shutil
import stat
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Literal

from ._archive import build_archive, extract_into, validate_archive
from ._client import identifier
from ._config import MAX_TIMEOUT_MS
from ._errors import CreateosError
from ._execute import execute_command
from ._script import NUL_IN_VALUE, quote
from ._signal import any_signal, deadline_signal
from ._tarmeter import ArchiveMeter
from ._types import (
    ExecuteParams,
    FileMapping,
    PostUploadCommand,
    SyncOperation,
    SyncOperationResult,
    SyncResult,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence

    from ._client import CreateosClient
    from ._clock import Clock
    from ._signal import AbortSignal
    from ._types import ExecuteResult

    ExecuteFn = Callable[..., Awaitable[ExecuteResult]]

__all__ = ["WORKSPACE_ROOT", "assert_remote_path", "sync_files", "validate_operations"]

WORKSPACE_ROOT = "/paperclip-workspace"
SCRATCH_PREFIX = "/tmp/paperclip-createos-transfer-"
HOST_TEMP_PREFIX = ".paperclip-createos-"
_CHUNK = 1024 * 1024

UNSUPPORTED_KIND = "Unsupported CreateOS transfer kind."
NO_FOLLOW_SYMLINKS = (
    "CreateOS does not support followSymlinks for host directory uploads; "
    "stage files inside the source directory and omit this option."
)
HOST_PATH = "CreateOS transfer requires an absolute host path."
INVALID_MODE = "Invalid CreateOS file mode."
NOT_CONFINED = "CreateOS transfer requires a confined absolute sandbox path."
ESCAPES = "CreateOS transfer path escapes the workspace."
INVALID_TIMEOUT = "Invalid CreateOS transfer timeout."
OUTBOUND_COMMANDS = "Outbound CreateOS transfers cannot run post-upload commands."
COMMAND_FAILED = "CreateOS transfer command failed."
# Not in the spec: the JavaScript types rule these out; ours, in the spec's wording.
INVALID_EXCLUDE = "Invalid CreateOS transfer exclusion."
INVALID_COMMAND = "Invalid CreateOS transfer command."
INVALID_OPERATION = "Invalid CreateOS transfer operation."
NOT_A_FILE = "CreateOS transfer source is not a readable host file."
NOT_A_DIRECTORY = "CreateOS transfer source is not a readable host directory."

Direction = Literal["in", "out"]


# -- validation (no side effects) ----------------------------------------------------------------


def assert_remote_path(path: object) -> str:
    """A sandbox path: absolute, no NUL, no ``..``, and inside the workspace root."""
    if (
        not isinstance(path, str)
        or not path.startswith("/")
        or "\x00" in path
        or ".." in path.split("/")
    ):
        raise CreateosError(NOT_CONFINED)
    normalized = posixpath.normpath(path)
    if normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    if normalized != WORKSPACE_ROOT and not normalized.startswith(WORKSPACE_ROOT + "/"):
        raise CreateosError(ESCAPES)
    return normalized


def _sequence_of(values: object, kind: type) -> bool:
    """A list or tuple (never a bare string) whose items are all ``kind``."""
    return isinstance(values, list | tuple) and all(isinstance(v, kind) for v in values)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_mapping(mapping: FileMapping, direction: Direction) -> None:
    if mapping.kind not in ("file", "directory"):
        raise CreateosError(UNSUPPORTED_KIND)
    if direction == "in" and mapping.kind == "directory" and mapping.follow_symlinks:
        raise CreateosError(NO_FOLLOW_SYMLINKS)
    host = mapping.source if direction == "in" else mapping.target
    host = os.fspath(host) if isinstance(host, os.PathLike) else host
    if not isinstance(host, str) or not os.path.isabs(host) or "\x00" in host:
        raise CreateosError(HOST_PATH)
    if mapping.mode is not None and not (_is_int(mapping.mode) and 0 <= mapping.mode <= 0o777):
        raise CreateosError(INVALID_MODE)
    assert_remote_path(mapping.target if direction == "in" else mapping.source)
    if not _sequence_of(mapping.exclude, str) or not all(
        p and "\x00" not in p for p in mapping.exclude
    ):
        raise CreateosError(INVALID_EXCLUDE)


def _check_command(command: PostUploadCommand) -> None:
    if not isinstance(command.command, str):
        raise CreateosError(INVALID_COMMAND)
    if "\x00" in command.command:
        raise CreateosError(NUL_IN_VALUE)
    assert_remote_path(command.cwd if command.cwd is not None else WORKSPACE_ROOT)
    timeout = command.timeout_ms
    if timeout is not None and not (_is_int(timeout) and 1 <= timeout <= MAX_TIMEOUT_MS):
        raise CreateosError(INVALID_TIMEOUT)


def validate_operations(
    lease_id: object, operations: Sequence[SyncOperation], direction: Direction
) -> str:
    """Check the whole batch; return the sandbox id. Raises before anything is touched."""
    sandbox_id = identifier(lease_id)
    if not _sequence_of(operations, SyncOperation) or not all(
        _sequence_of(op.mappings, FileMapping)
        and _sequence_of(op.post_upload_commands, PostUploadCommand)
        for op in operations
    ):
        raise CreateosError(INVALID_OPERATION)
    for operation in operations:
        for mapping in operation.mappings:
            _check_mapping(mapping, direction)
        if direction == "out" and operation.post_upload_commands:
            raise CreateosError(OUTBOUND_COMMANDS)
        for command in operation.post_upload_commands:
            _check_command(command)
    return sandbox_id


# -- remote scripts ------------------------------------------------------------------------------


def _guard(candidate: str) -> str:
    """Resolve ``candidate`` inside the sandbox into ``$resolved``; exit 1 if it escapes."""
    root = quote(WORKSPACE_ROOT)
    return "\n".join(
        [
            f"root=$(realpath -- {root}) || exit 1",
            f'[ "$root" = {root} ] || exit 1',
            f"resolved=$(realpath -m -- {quote(candidate)}) || exit 1",
            f'case "$resolved" in {root}|{root}/*) ;; *) exit 1 ;; esac',
        ]
    )


def _mode(mode: int) -> str:
    return f"{mode:04o}"


# -- the run -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Sync:
    """One ``sync_files`` call: the client, the signal and the remote command runner."""

    client: CreateosClient
    sandbox_id: str
    signal: AbortSignal
    clock: Clock
    execute: ExecuteFn

    async def remote(
        self, script: str, *, cwd: str = WORKSPACE_ROOT, timeout_ms: int | None = None
    ) -> None:
        """Run ``/bin/bash -c script``; a timeout or non-zero exit fails the transfer."""
        params = ExecuteParams(command="/bin/bash", args=("-c", script), cwd=cwd)
        if timeout_ms is None:
            result = await self.execute(
                self.client, self.sandbox_id, params, self.signal, None, clock=self.clock
            )
        else:
            async with deadline_signal(self.clock, timeout_ms / 1000) as deadline:
                async with any_signal(self.signal, deadline) as combined:
                    result = await self.execute(
                        self.client, self.sandbox_id, params, combined, None, clock=self.clock
                    )
        if result.timed_out or result.exit_code != 0:
            raise CreateosError(COMMAND_FAILED)

    async def mapping(self, mapping: FileMapping, direction: Direction) -> tuple[int, int]:
        """Transfer one mapping; returns (files, bytes). Scratch and temp dirs never linger."""
        self.signal.raise_if_aborted()
        scratch = f"{SCRATCH_PREFIX}{uuid.uuid4()}"
        if direction == "in":
            await asyncio.to_thread(_check_source, mapping)  # before anything is created
            temp_parent = None
        else:
            temp_parent = str(PurePath(mapping.target).parent)
            await asyncio.to_thread(os.makedirs, temp_parent, exist_ok=True)
        temp = Path(await asyncio.to_thread(tempfile.mkdtemp, "", HOST_TEMP_PREFIX, temp_parent))
        try:
            if direction == "in" and mapping.kind == "file":
                return await self._in_file(mapping, scratch, temp)
            if direction == "in":
                return await self._in_directory(mapping, scratch, temp)
            if mapping.kind == "file":
                return await self._out_file(mapping, scratch, temp)
            return await self._out_directory(mapping, scratch, temp)
        finally:
            await asyncio.to_thread(shutil.rmtree, temp, True)
            with contextlib.suppress(Exception):
                # Default per-request deadline: this must run even after the signal fired.
                await self.client.request_json(
                    "POST",
                    f"/sandboxes/{self.sandbox_id}/exec",
                    body={"cmd": "/bin/rm", "args": ["-f", "--", scratch]},
                )

    async def _in_file(self, mapping: FileMapping, scratch: str, temp: Path) -> tuple[int, int]:
        del temp  # inbound files stream straight from the source
        info = await asyncio.to_thread(os.stat, mapping.source)
        sent = await self._upload(Path(mapping.source), scratch)
        mode = mapping.mode if mapping.mode is not None else info.st_mode & 0o777
        await self.remote(
            "\n".join(
                [
                    _guard(mapping.target),
                    f'mkdir -p -- "${{resolved%/*}}" && chmod {_mode(mode)} -- {quote(scratch)}'
                    f' && mv -f -- {quote(scratch)} "$resolved"',
                ]
            )
        )
        return 1, sent

    async def _in_directory(
        self, mapping: FileMapping, scratch: str, temp: Path
    ) -> tuple[int, int]:
        archive = temp / "data"
        files = await asyncio.to_thread(
            build_archive, Path(mapping.source), archive, list(mapping.exclude)
        )
        sent = await self._upload(archive, scratch)
        mode = mapping.mode if mapping.mode is not None else 0o755
        await self.remote(
            "\n".join(
                [
                    _guard(mapping.target),
                    f'mkdir -p -- "$resolved" && tar -xf {quote(scratch)} -C "$resolved"'
                    f' && chmod {_mode(mode)} -- "$resolved"',
                ]
            )
        )
        return files, sent

    async def _out_file(self, mapping: FileMapping, scratch: str, temp: Path) -> tuple[int, int]:
        await self.remote(
            "\n".join(
                [
                    _guard(mapping.source),
                    f'test -f "$resolved" && cp -- "$resolved" {quote(scratch)}',
                ]
            )
        )
        mode = mapping.mode if mapping.mode is not None else 0o600
        data = temp / "data"
        received = await self._download(scratch, data, mode)
        await asyncio.to_thread(os.replace, data, mapping.target)
        return 1, received

    async def _out_directory(
        self, mapping: FileMapping, scratch: str, temp: Path
    ) -> tuple[int, int]:
        options = ["-h"] if mapping.follow_symlinks else []
        options += [f"--exclude={quote(pattern)}" for pattern in mapping.exclude]
        tar = " ".join(["tar", *options, "-cf", quote(scratch), "-C", '"$resolved"', "."])
        await self.remote("\n".join([_guard(mapping.source), f'test -d "$resolved" && {tar}']))
        archive = temp / "data"
        received = await self._download(scratch, archive, 0o600, ArchiveMeter())
        files = await asyncio.to_thread(validate_archive, archive)
        await asyncio.to_thread(extract_into, archive, Path(mapping.target), mapping.mode)
        return files, received

    async def _upload(self, source: Path, scratch: str) -> int:
        sent = 0

        async def chunks(handle: int) -> AsyncGenerator[bytes, None]:
            nonlocal sent
            while chunk := await asyncio.to_thread(os.read, handle, _CHUNK):
                sent += len(chunk)
                yield chunk

        handle = await asyncio.to_thread(os.open, source, os.O_RDONLY)
        body = chunks(handle)
        try:
            await self.client.upload(self.sandbox_id, scratch, body, signal=self.signal)
        finally:
            await body.aclose()  # a failed upload may leave it half-read
            await asyncio.to_thread(os.close, handle)
        return sent

    async def _download(
        self, scratch: str, destination: Path, mode: int, meter: ArchiveMeter | None = None
    ) -> int:
        """GET ``scratch`` into a new file (exclusive create) with exactly ``mode``.

        ``meter`` sees each chunk before it is written and may end the download early.
        """
        received = 0
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        handle = await asyncio.to_thread(os.open, destination, flags, 0o600)
        try:
            async with self.client.download(self.sandbox_id, scratch, signal=self.signal) as chunks:
                async for chunk in chunks:
                    if meter is not None:
                        meter.feed(chunk)
                    await asyncio.to_thread(_write_all, handle, chunk)
                    received += len(chunk)
            await asyncio.to_thread(os.fchmod, handle, mode)  # exact, whatever the umask
        finally:
            await asyncio.to_thread(os.close, handle)
        return received

    async def post_upload(self, command: PostUploadCommand) -> None:
        cwd = command.cwd if command.cwd is not None else WORKSPACE_ROOT
        await self.remote(_guard(cwd))
        await self.remote(command.command, cwd=cwd, timeout_ms=command.timeout_ms)


def _check_source(mapping: FileMapping) -> None:
    """The inbound source exists and is what the mapping says (links followed)."""
    try:
        mode = os.stat(mapping.source).st_mode
    except (OSError, ValueError):
        mode = 0
    if mapping.kind == "file" and not stat.S_ISREG(mode):
        raise CreateosError(NOT_A_FILE)
    if mapping.kind == "directory" and not stat.S_ISDIR(mode):
        raise CreateosError(NOT_A_DIRECTORY)


def _write_all(handle: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(handle, view)
        view = view[written:]


async def sync_files(
    client: CreateosClient,
    lease_id: object,
    operations: Sequence[SyncOperation],
    direction: Direction,
    signal: AbortSignal,
    *,
    clock: Clock | None = None,
    execute: ExecuteFn | None = None,
) -> SyncResult:
    """Run ``operations`` in ``direction`` ("in": host → sandbox, "out": sandbox → host).

    Validates everything first (no request, no host change on bad input). ``execute`` runs
    remote scripts (default ``execute_command``); cleanup requests use the client's default
    per-request deadline. Errors: the spec's fixed messages; a remote step that fails or times
    out is "CreateOS transfer command failed."; host cancellation surfaces from
    ``execute_command`` as "CreateOS command was cancelled.".
    """
    if direction not in ("in", "out"):
        raise ValueError("direction must be 'in' or 'out'")
    sandbox_id = validate_operations(lease_id, operations, direction)
    clock = clock if clock is not None else client.clock
    run = _Sync(client, sandbox_id, signal, clock, execute or execute_command)
    results: list[SyncOperationResult] = []
    for operation in operations:
        files = sent = 0
        for mapping in operation.mappings:
            more_files, more_bytes = await run.mapping(mapping, direction)
            files += more_files
            sent += more_bytes
        for command in operation.post_upload_commands:
            await run.post_upload(command)
        results.append(SyncOperationResult(operation.operation_id, files, sent))
    return SyncResult(operations=results)
