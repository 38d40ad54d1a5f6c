"""File sync validates the whole batch before any side effect: exact messages, zero requests."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from fake_server import clock_transport
from pytest_createos.provider._client import CreateosClient, HttpPool
from pytest_createos.provider._errors import CreateosError
from pytest_createos.provider._pacing import Pacer
from pytest_createos.provider._signal import AbortController
from pytest_createos.provider._sync import assert_remote_path, sync_files
from pytest_createos.provider._types import FileMapping, PostUploadCommand, SyncOperation

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fake_server.clock import VirtualClock

    from .conftest import ScriptedApi

W = "/paperclip-workspace"


@pytest_asyncio.fixture
async def client(scripted: ScriptedApi, clock: VirtualClock) -> AsyncIterator[CreateosClient]:
    pool = HttpPool(clock_transport(clock))
    yield CreateosClient(
        http=pool.get(scripted.url),
        api_url=scripted.url,
        api_key="k",
        timeout_ms=30_000,
        clock=clock,
        pacer=Pacer.disabled(),
    )
    await pool.aclose()


@pytest.mark.parametrize(
    "path",
    [
        "/paperclip-workspace",
        "/paperclip-workspace/a/b",
        "/paperclip-workspace/./a/",
        "//paperclip-workspace/x",
    ],
)
def test_confined_paths(path: str) -> None:
    assert assert_remote_path(path).startswith(W)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", "CreateOS transfer path escapes the workspace."),
        ("/paperclip-workspace-other/file", "CreateOS transfer path escapes the workspace."),
        ("/", "CreateOS transfer path escapes the workspace."),
        (
            "/paperclip-workspace/../secret",
            "CreateOS transfer requires a confined absolute sandbox path.",
        ),
        (
            "/paperclip-workspace/a/..",
            "CreateOS transfer requires a confined absolute sandbox path.",
        ),
        ("relative", "CreateOS transfer requires a confined absolute sandbox path."),
        ("paperclip-workspace/x", "CreateOS transfer requires a confined absolute sandbox path."),
        (
            "/paperclip-workspace/a\x00",
            "CreateOS transfer requires a confined absolute sandbox path.",
        ),
        ("", "CreateOS transfer requires a confined absolute sandbox path."),
    ],
)
def test_unconfined_paths(path: str, message: str) -> None:
    with pytest.raises(CreateosError) as info:
        assert_remote_path(path)
    assert str(info.value) == message


def _entries(path: Path) -> list[Path]:
    return list(path.iterdir())


def _op(*mappings: FileMapping, commands: tuple[PostUploadCommand, ...] = ()) -> SyncOperation:
    return SyncOperation(operation_id="op", mappings=mappings, post_upload_commands=commands)


def _inbound(**overrides: Any) -> FileMapping:
    values: dict[str, Any] = {"kind": "file", "source": "/host/a", "target": f"{W}/a"}
    values.update(overrides)
    return FileMapping(**values)


_GOOD = _inbound()

INBOUND_CASES = [
    (_inbound(kind="socket"), "Unsupported CreateOS transfer kind."),
    (_inbound(kind=None), "Unsupported CreateOS transfer kind."),
    (
        _inbound(kind="directory", follow_symlinks=True),
        "CreateOS does not support followSymlinks for host directory uploads; stage files inside "
        "the source directory and omit this option.",
    ),
    (_inbound(source="relative/a"), "CreateOS transfer requires an absolute host path."),
    (_inbound(source=""), "CreateOS transfer requires an absolute host path."),
    (_inbound(source="/host/\x00"), "CreateOS transfer requires an absolute host path."),
    (_inbound(mode=0o1000), "Invalid CreateOS file mode."),
    (_inbound(mode=-1), "Invalid CreateOS file mode."),
    (_inbound(mode=True), "Invalid CreateOS file mode."),
    (_inbound(mode=0.5), "Invalid CreateOS file mode."),
    (_inbound(mode="644"), "Invalid CreateOS file mode."),
    (_inbound(target="/etc/passwd"), "CreateOS transfer path escapes the workspace."),
    (_inbound(target=f"{W}/../x"), "CreateOS transfer requires a confined absolute sandbox path."),
    (_inbound(exclude="*.log"), "Invalid CreateOS transfer exclusion."),
    (_inbound(exclude=["a\x00"]), "Invalid CreateOS transfer exclusion."),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("bad", "message"), INBOUND_CASES)
async def test_bad_inbound_mapping_anywhere_in_the_batch_stops_everything(
    scripted: ScriptedApi, client: CreateosClient, bad: FileMapping, message: str
) -> None:
    operations = [_op(_GOOD), _op(_GOOD, bad)]
    with pytest.raises(CreateosError) as info:
        await sync_files(client, "sb-1", operations, "in", AbortController().signal)
    assert str(info.value) == message
    assert scripted.calls == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("command", "message"),
    [
        (PostUploadCommand("true", cwd="/tmp"), "CreateOS transfer path escapes the workspace."),
        (
            PostUploadCommand("true", cwd="rel"),
            "CreateOS transfer requires a confined absolute sandbox path.",
        ),
        (PostUploadCommand("true", timeout_ms=0), "Invalid CreateOS transfer timeout."),
        (PostUploadCommand("true", timeout_ms=86_400_001), "Invalid CreateOS transfer timeout."),
        (PostUploadCommand("true", timeout_ms=1.5), "Invalid CreateOS transfer timeout."),  # type: ignore[arg-type]
        (PostUploadCommand("true", timeout_ms=True), "Invalid CreateOS transfer timeout."),
        (PostUploadCommand("a\x00"), "Sandbox command values cannot contain NUL."),
        (PostUploadCommand(None), "Invalid CreateOS transfer command."),  # type: ignore[arg-type]
    ],
)
async def test_bad_post_upload_command(
    scripted: ScriptedApi, client: CreateosClient, command: PostUploadCommand, message: str
) -> None:
    with pytest.raises(CreateosError) as info:
        await sync_files(
            client, "sb-1", [_op(_GOOD, commands=(command,))], "in", AbortController().signal
        )
    assert str(info.value) == message
    assert scripted.calls == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("mapping", "commands", "message"),
    [
        (
            FileMapping("file", f"{W}/a", "/host/a"),
            (PostUploadCommand("true"),),
            "Outbound CreateOS transfers cannot run post-upload commands.",
        ),
        (
            FileMapping("file", f"{W}/a", "host/a"),
            (),
            "CreateOS transfer requires an absolute host path.",
        ),
        (
            FileMapping("file", "/etc/shadow", "/host/a"),
            (),
            "CreateOS transfer path escapes the workspace.",
        ),
        (FileMapping("link", f"{W}/a", "/host/a"), (), "Unsupported CreateOS transfer kind."),
    ],
)
async def test_bad_outbound_batch(
    scripted: ScriptedApi,
    client: CreateosClient,
    tmp_path: Path,
    mapping: FileMapping,
    commands: tuple[PostUploadCommand, ...],
    message: str,
) -> None:
    good = FileMapping("file", f"{W}/ok", str(tmp_path / "ok"))
    with pytest.raises(CreateosError) as info:
        await sync_files(
            client,
            "sb-1",
            [_op(good), _op(mapping, commands=commands)],
            "out",
            AbortController().signal,
        )
    assert str(info.value) == message
    assert scripted.calls == []
    assert _entries(tmp_path) == []


@pytest.mark.asyncio
async def test_outbound_directory_may_follow_symlinks_but_inbound_may_not(
    scripted: ScriptedApi, client: CreateosClient
) -> None:
    # Validation only: an outbound follow_symlinks mapping passes validation (it maps to tar -h).
    from pytest_createos.provider._sync import validate_operations

    mapping = FileMapping("directory", f"{W}/d", "/host/d", follow_symlinks=True)
    assert validate_operations("sb-1", [_op(mapping)], "out") == "sb-1"
    with pytest.raises(CreateosError):
        validate_operations(
            "sb-1", [_op(FileMapping("directory", "/h", f"{W}/d", follow_symlinks=True))], "in"
        )


@pytest.mark.asyncio
async def test_invalid_lease_id(scripted: ScriptedApi, client: CreateosClient) -> None:
    with pytest.raises(CreateosError) as info:
        await sync_files(client, "../sb", [_op(_GOOD)], "in", AbortController().signal)
    assert str(info.value) == "CreateOS returned an invalid resource ID."
    assert scripted.calls == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "operations",
    [
        [{"operation_id": "op", "mappings": []}],
        "op",
        [SyncOperation("op", mappings=[{"kind": "file"}])],  # type: ignore[list-item]
        [SyncOperation("op", post_upload_commands=["true"])],  # type: ignore[list-item]
        [SyncOperation("op", mappings=None)],  # type: ignore[arg-type]
    ],
)
async def test_wrongly_shaped_operations(
    scripted: ScriptedApi, client: CreateosClient, operations: Any
) -> None:
    with pytest.raises(CreateosError) as info:
        await sync_files(client, "sb-1", operations, "in", AbortController().signal)
    assert str(info.value) == "Invalid CreateOS transfer operation."
    assert scripted.calls == []


def test_host_paths_may_be_path_objects_and_exclude_must_be_a_list() -> None:
    from pytest_createos.provider._sync import validate_operations

    mapping = FileMapping("file", Path("/host/a"), f"{W}/a")  # type: ignore[arg-type]
    assert validate_operations("sb-1", [_op(mapping)], "in") == "sb-1"
    with pytest.raises(CreateosError) as info:
        validate_operations("sb-1", [_op(_inbound(exclude=None))], "in")
    assert str(info.value) == "Invalid CreateOS transfer exclusion."
