"""Execution and sync against ``FakeCreateOS`` with injected faults: the provider's recovery paths.

Where test_execute_protocol.py scripts raw frames, this drives the real fake and its fault
engine (cut streams, replayed and skipped frames, lost replies, truncated downloads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from _leased import Leased

from fake_server.faults import (
    CutStream,
    DuplicateFrame,
    ExitWithoutStatus,
    Fault,
    HttpError,
    LostReply,
    MalformedFrame,
    SkipFrame,
    TruncatedDownload,
)
from pytest_createos.provider import (
    CreateosCleanupError,
    CreateosError,
    FileMapping,
    SyncOperation,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from pytest_createos.provider import ExecuteResult

# Output in two bursts with a pause between, so the stream carries at least two data frames.
TWO_FRAMES = ["-c", "echo first; sleep 1; echo second"]


class Sandbox(Leased):
    async def run(self, args: list[str], **kwargs: object) -> ExecuteResult:
        return await self.provider.execute(self.env, self.lease, "/bin/bash", args, **kwargs)  # type: ignore[arg-type]

    def count(self, operation: str) -> int:
        return len(self.fake.journal.requests(operation))


@pytest_asyncio.fixture
async def sandbox(leased: Leased) -> AsyncIterator[Sandbox]:
    yield Sandbox(**vars(leased))


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["reset", "eof"])
async def test_cut_stream_reconnects_and_loses_nothing(sandbox: Sandbox, mode: str) -> None:
    sandbox.fake.faults.add(Fault("connect_process", CutStream(after_frames=1, mode=mode)))  # type: ignore[arg-type]
    result = await sandbox.run(TWO_FRAMES)
    assert (result.exit_code, result.stdout) == (0, "first\nsecond\n")
    assert sandbox.count("connect_process") == 2
    assert sandbox.count("create_process") == 1  # never re-created
    assert sandbox.count("kill_process") == 0


@pytest.mark.asyncio
async def test_replayed_frame_is_ignored(sandbox: Sandbox) -> None:
    sandbox.fake.faults.add(Fault("connect_process", DuplicateFrame(frame=1)))
    result = await sandbox.run(TWO_FRAMES)
    assert result.stdout == "first\nsecond\n"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("action", "message"),
    [
        (SkipFrame(frame=1), "CreateOS process output has a sequence gap."),
        (MalformedFrame(after_frames=1), "CreateOS returned an invalid process frame."),
        (ExitWithoutStatus(), "CreateOS process exit status is missing."),
        (HttpError(410), "CreateOS process output was evicted before it could be read."),
        (HttpError(403), "CreateOS request failed (HTTP 403) during output connection."),
    ],
)
async def test_bad_streams_fail_closed_and_kill(
    sandbox: Sandbox, action: object, message: str
) -> None:
    sandbox.fake.faults.add(Fault("connect_process", action))  # type: ignore[arg-type]
    with pytest.raises(CreateosError) as info:
        await sandbox.run(TWO_FRAMES)
    assert str(info.value) == message
    assert sandbox.count("connect_process") == 1
    assert sandbox.count("kill_process") == 1


@pytest.mark.asyncio
async def test_connect_outage_is_bounded(sandbox: Sandbox) -> None:
    sandbox.fake.faults.add(Fault("connect_process", HttpError(503), times=None))
    with pytest.raises(CreateosError) as info:
        await sandbox.run(TWO_FRAMES)
    assert str(info.value) == "CreateOS process output connection failed."
    assert sandbox.count("connect_process") == 4
    assert sandbox.count("kill_process") == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("action", [HttpError(502), LostReply()])
async def test_ambiguous_creation_blocks_the_lease(sandbox: Sandbox, action: object) -> None:
    sandbox.fake.faults.add(Fault("create_process", action))  # type: ignore[arg-type]
    with pytest.raises(CreateosCleanupError) as info:
        await sandbox.run(["-c", "true"])
    assert str(info.value) == (
        "CreateOS process creation could not be confirmed; destroy the lease before reusing it."
    )
    assert sandbox.count("create_process") == 1
    with pytest.raises(CreateosError) as blocked:
        await sandbox.run(["-c", "true"])
    assert str(blocked.value) == "CreateOS lease is closing or requires cleanup."


@pytest.mark.asyncio
async def test_failed_kill_after_timeout_is_a_cleanup_error(sandbox: Sandbox) -> None:
    sandbox.fake.faults.add(Fault("kill_process", HttpError(500)))
    with pytest.raises(CreateosCleanupError) as info:
        await sandbox.run(["-c", "sleep 60"], timeout_ms=1000)
    assert str(info.value) == "CreateOS command cleanup failed; process termination is unconfirmed."


@pytest.mark.asyncio
async def test_truncated_download_keeps_the_old_target(sandbox: Sandbox, tmp_path: Path) -> None:
    lease_id = sandbox.lease.provider_lease_id
    assert lease_id is not None
    sandbox.fake.sandbox(lease_id).disk.write_file("/paperclip-workspace/f", b"n" * 100_000)
    target = tmp_path / "f"
    target.write_bytes(b"old")
    sandbox.fake.faults.add(Fault("download_file", TruncatedDownload(after_bytes=1000)))
    operation = SyncOperation("o", [FileMapping("file", "/paperclip-workspace/f", str(target))])
    with pytest.raises(CreateosError) as info:
        await sandbox.provider.sync_out(sandbox.env, sandbox.lease, [operation])
    assert str(info.value) == "CreateOS connection failed."
    assert target.read_bytes() == b"old"
    assert _names(tmp_path) == ["f"]  # no temp dir left behind


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.asyncio
async def test_euro_split_across_frames_and_a_reconnect(sandbox: Sandbox) -> None:
    sandbox.fake.faults.add(Fault("connect_process", CutStream(after_frames=1)))
    logged: list[tuple[str, str]] = []
    result = await sandbox.run(
        ["-c", r"printf '\xe2'; sleep 1; printf '\x82\xac'"],
        log=lambda stream, text: logged.append((stream, text)),
    )
    assert result.stdout == "€"
    assert logged == [("stdout", "€")]
    assert sandbox.count("connect_process") == 2


@pytest.mark.asyncio
async def test_failed_upload_leaves_no_target_and_no_scratch(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    source = tmp_path / "src.bin"
    source.write_bytes(b"x" * 200_000)
    sandbox.fake.faults.add(Fault("upload_file", HttpError(500)))
    operation = SyncOperation("o", [FileMapping("file", str(source), "/paperclip-workspace/t")])
    with pytest.raises(CreateosError) as info:
        await sandbox.provider.sync_in(sandbox.env, sandbox.lease, [operation])
    assert str(info.value) == "CreateOS request failed (HTTP 500) during file transfer."
    lease_id = sandbox.lease.provider_lease_id
    assert lease_id is not None
    disk = sandbox.fake.sandbox(lease_id).disk
    assert disk.exists("/paperclip-workspace/t") is False
    names = [entry["name"] for entry in disk.fs.read_dir("/tmp")]
    assert [n for n in names if n.startswith("paperclip-createos-transfer-")] == []
    assert sandbox.fake.journal.operations()[-1] == "exec"  # the scratch rm still ran
