"""File sync end to end against ``FakeCreateOS``: real tar, realpath and mv inside the sandbox."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from _leased import Leased

from pytest_createos.provider import (
    CreateosApiError,
    CreateosError,
    FileMapping,
    PostUploadCommand,
    SyncOperation,
)
from pytest_createos.provider._config import parse_config
from pytest_createos.provider._execute import execute_command
from pytest_createos.provider._signal import AbortController
from pytest_createos.provider._sync import sync_files
from pytest_createos.provider._types import SyncOperationResult

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


W = "/paperclip-workspace"
FAILED = "CreateOS transfer command failed."
UNSAFE = "CreateOS archive contains unsafe entries or exceeds the extraction limit."


class Sandbox(Leased):
    @property
    def disk(self) -> Any:
        return self.fake.sandbox(self.id).disk

    async def sync_in(self, *operations: SyncOperation) -> list[SyncOperationResult]:
        return (await self.provider.sync_in(self.env, self.lease, operations)).operations

    async def sync_out(self, *operations: SyncOperation) -> list[SyncOperationResult]:
        return (await self.provider.sync_out(self.env, self.lease, operations)).operations

    def mode(self, path: str) -> int:
        return int(self.disk.fs.stat(path)["mode"]) & 0o777

    def scratch_left(self) -> list[str]:
        names = [entry["name"] for entry in self.disk.fs.read_dir("/tmp")]
        return [n for n in names if n.startswith("paperclip-createos-transfer-")]


@pytest_asyncio.fixture
async def sandbox(leased: Leased) -> AsyncIterator[Sandbox]:
    yield Sandbox(**vars(leased))


def op(*mappings: FileMapping, commands: tuple[PostUploadCommand, ...] = (), oid: str = "op"):  # type: ignore[no-untyped-def]
    return SyncOperation(operation_id=oid, mappings=mappings, post_upload_commands=commands)


def host_tree(root: Path) -> dict[str, str]:
    """Relative path → "file:<content>:<mode>" | "dir:<mode>" | "link:<target>"."""
    tree: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                tree[rel] = f"link:{os.readlink(path)}"
            elif stat.S_ISDIR(info.st_mode):
                tree[rel] = f"dir:{oct(info.st_mode & 0o777)}"
            else:
                tree[rel] = f"file:{path.read_bytes().decode()}:{oct(info.st_mode & 0o777)}"
    return tree


def leftovers(parent: Path) -> list[str]:
    return [p.name for p in parent.iterdir() if p.name.startswith(".paperclip-createos-")]


# -- inbound -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_inbound_file_keeps_bytes_and_host_mode(sandbox: Sandbox, tmp_path: Path) -> None:
    source = tmp_path / "tool.sh"
    payload = bytes(range(256)) * 40
    source.write_bytes(payload)
    source.chmod(0o750)
    results = await sandbox.sync_in(
        op(FileMapping("file", str(source), f"{W}/bin/deep/tool.sh"), oid="files")
    )
    assert results == [SyncOperationResult("files", 1, len(payload))]
    assert sandbox.disk.read_file(f"{W}/bin/deep/tool.sh") == payload
    assert sandbox.mode(f"{W}/bin/deep/tool.sh") == 0o750
    assert sandbox.scratch_left() == []


@pytest.mark.asyncio
async def test_inbound_file_mode_override_and_overwrite(sandbox: Sandbox, tmp_path: Path) -> None:
    source = tmp_path / "a.txt"
    source.write_text("new")
    sandbox.disk.write_file(f"{W}/a.txt", b"old content")
    await sandbox.sync_in(op(FileMapping("file", str(source), f"{W}/a.txt", mode=0o604)))
    assert sandbox.disk.read_file(f"{W}/a.txt") == b"new"
    assert sandbox.mode(f"{W}/a.txt") == 0o604


@pytest.mark.asyncio
async def test_inbound_directory_with_links_excludes_and_nesting(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    src = tmp_path / "project"
    (src / "src" / "pkg").mkdir(parents=True)
    (src / "src" / "pkg" / "mod.py").write_text("print(1)")
    (src / "src" / "run.sh").write_text("#!/bin/sh")
    (src / "src" / "run.sh").chmod(0o755)
    (src / "debug.log").write_text("noise")
    (src / "node_modules" / "x").mkdir(parents=True)
    (src / "node_modules" / "x" / "i.js").write_text("x")
    (src / "latest").symlink_to("src/run.sh")
    results = await sandbox.sync_in(
        op(FileMapping("directory", str(src), f"{W}/project", exclude=["*.log", "node_modules"]))
    )
    (result,) = results
    assert result.files_transferred == 2
    assert result.bytes_transferred > 0
    disk = sandbox.disk
    assert disk.read_file(f"{W}/project/src/pkg/mod.py") == b"print(1)"
    assert sandbox.mode(f"{W}/project/src/run.sh") == 0o755
    assert disk.fs.read_link(f"{W}/project/latest") == "src/run.sh"
    assert disk.exists(f"{W}/project/debug.log") is False
    assert disk.exists(f"{W}/project/node_modules") is False
    assert sandbox.mode(f"{W}/project") == 0o755
    assert sandbox.scratch_left() == []


@pytest.mark.asyncio
async def test_inbound_directory_mode(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    await sandbox.sync_in(op(FileMapping("directory", str(tmp_path / "d"), f"{W}/d", mode=0o700)))
    assert sandbox.mode(f"{W}/d") == 0o700


@pytest.mark.asyncio
async def test_symlink_planted_in_the_workspace_cannot_redirect_a_write(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.disk.fs.symlink("/etc", f"{W}/evil")
    source = tmp_path / "x"
    source.write_text("pwned")
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_in(op(FileMapping("file", str(source), f"{W}/evil/x")))
    assert str(info.value) == FAILED
    assert sandbox.disk.exists("/etc/x") is False
    assert sandbox.scratch_left() == []


@pytest.mark.asyncio
async def test_post_upload_commands_run_in_order_and_stop_at_first_failure(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    (tmp_path / "f").write_text("x")
    sandbox.disk.write_file(f"{W}/sub/.keep", b"")
    commands = (
        PostUploadCommand("pwd > where && echo one >> order", cwd=f"{W}/sub"),
        PostUploadCommand("echo two >> sub/order; exit 3"),
        PostUploadCommand("echo three >> sub/order"),
    )
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_in(
            op(FileMapping("file", str(tmp_path / "f"), f"{W}/f"), commands=commands)
        )
    assert str(info.value) == FAILED
    assert sandbox.disk.read_file(f"{W}/sub/where") == f"{W}/sub\n".encode()
    assert sandbox.disk.read_file(f"{W}/sub/order") == b"one\ntwo\n"
    assert sandbox.disk.read_file(f"{W}/f") == b"x"  # the files landed first


@pytest.mark.asyncio
async def test_post_upload_command_timeout_fails_the_transfer(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    start = sandbox.clock.now()
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_in(op(commands=(PostUploadCommand("sleep 600", timeout_ms=1000),)))
    assert str(info.value) == FAILED
    assert sandbox.clock.now() - start < 600


@pytest.mark.asyncio
async def test_post_upload_command_cwd_through_a_planted_link_is_refused(
    sandbox: Sandbox,
) -> None:
    sandbox.disk.fs.symlink("/tmp", f"{W}/out")
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_in(op(commands=(PostUploadCommand("touch owned", cwd=f"{W}/out"),)))
    assert str(info.value) == FAILED
    assert sandbox.disk.exists("/tmp/owned") is False


# -- outbound ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_outbound_file_exact_mode_and_atomic_replace(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.disk.write_file(f"{W}/report.txt", "résumé".encode())
    target = tmp_path / "nested" / "report.txt"
    old_umask = os.umask(0o077)
    try:
        results = await sandbox.sync_out(
            op(FileMapping("file", f"{W}/report.txt", str(target), mode=0o664))
        )
    finally:
        os.umask(old_umask)
    assert results == [SyncOperationResult("op", 1, len("résumé".encode()))]
    assert target.read_text() == "résumé"
    assert target.stat().st_mode & 0o777 == 0o664
    assert leftovers(target.parent) == []
    # Default mode 0600, replacing the existing file.
    sandbox.disk.write_file(f"{W}/report.txt", b"v2")
    await sandbox.sync_out(op(FileMapping("file", f"{W}/report.txt", str(target))))
    assert target.read_bytes() == b"v2"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sandbox.scratch_left() == []


@pytest.mark.asyncio
async def test_outbound_missing_source_leaves_target_alone(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("precious")
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_out(op(FileMapping("file", f"{W}/missing", str(target))))
    assert str(info.value) == FAILED
    assert target.read_text() == "precious"
    assert leftovers(tmp_path) == []


@pytest.mark.asyncio
async def test_failed_download_never_leaves_a_partial_target(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The scratch copy vanishes between ``cp`` and GET: 404, old target intact, no temp dir."""
    sandbox.disk.write_file(f"{W}/big.bin", b"new" * 1000)
    target = tmp_path / "big.bin"
    target.write_bytes(b"old")
    config = parse_config(sandbox.env.config)
    client = sandbox.provider._client(config)

    async def execute_then_lose_scratch(*args: Any, **kwargs: Any) -> Any:
        result = await execute_command(*args, **kwargs)
        for name in sandbox.scratch_left():
            sandbox.disk.remove(f"/tmp/{name}")
        return result

    with pytest.raises(CreateosApiError) as info:
        await sync_files(
            client,
            sandbox.id,
            [op(FileMapping("file", f"{W}/big.bin", str(target)))],
            "out",
            AbortController().signal,
            clock=sandbox.clock,
            execute=execute_then_lose_scratch,
        )
    assert str(info.value) == "CreateOS request failed (HTTP 404) during file transfer."
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


@pytest.mark.asyncio
async def test_directory_round_trip(sandbox: Sandbox, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a").chmod(0o750)
    (src / "a" / "b" / "deep.txt").write_text("deep")
    (src / "a" / "b" / "deep.txt").chmod(0o640)
    (src / "top.txt").write_text("top")
    (src / "top.txt").chmod(0o644)
    (src / "skip.tmp").write_text("tmp")
    (src / "link").symlink_to("a/b/deep.txt")
    (src / "dangling").symlink_to("nowhere")
    await sandbox.sync_in(op(FileMapping("directory", str(src), f"{W}/tree")))
    out = tmp_path / "out"
    results = await sandbox.sync_out(
        op(FileMapping("directory", f"{W}/tree", str(out), exclude=["*.tmp"]))
    )
    assert results[0].files_transferred == 2
    expected = host_tree(src)
    del expected["skip.tmp"]
    assert host_tree(out) == expected
    assert out.stat().st_mode & 0o777 == 0o700
    assert leftovers(tmp_path) == []
    assert sandbox.scratch_left() == []


@pytest.mark.asyncio
async def test_outbound_directory_follow_symlinks_dereferences(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.disk.write_file(f"{W}/d/real.txt", b"real")
    sandbox.disk.fs.symlink("real.txt", f"{W}/d/alias.txt")
    out = tmp_path / "out"
    await sandbox.sync_out(
        op(FileMapping("directory", f"{W}/d", str(out), mode=0o750, follow_symlinks=True))
    )
    assert not (out / "alias.txt").is_symlink()
    assert (out / "alias.txt").read_text() == "real"
    assert out.stat().st_mode & 0o777 == 0o750


@pytest.mark.asyncio
async def test_unsafe_remote_archive_is_rejected_before_extraction(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.disk.write_file(f"{W}/d/ok.txt", b"ok")
    sandbox.disk.fs.symlink("/etc/passwd", f"{W}/d/escape")
    out = tmp_path / "never"
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_out(op(FileMapping("directory", f"{W}/d", str(out))))
    assert str(info.value) == UNSAFE
    assert not out.exists()
    assert leftovers(tmp_path) == []
    assert sandbox.scratch_left() == []


@pytest.mark.asyncio
async def test_outbound_directory_into_a_host_symlink_is_refused(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.disk.write_file(f"{W}/d/ok.txt", b"ok")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "dest"
    link.symlink_to(elsewhere)
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_out(op(FileMapping("directory", f"{W}/d", str(link))))
    assert str(info.value) == "CreateOS archive destination cannot be a symlink."
    assert list(elsewhere.iterdir()) == []


@pytest.mark.asyncio
async def test_outbound_source_through_a_planted_link_is_refused(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.disk.fs.symlink("/etc", f"{W}/etc")
    target = tmp_path / "os-release"
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_out(op(FileMapping("file", f"{W}/etc/os-release", str(target))))
    assert str(info.value) == FAILED
    assert not target.exists()


@pytest.mark.asyncio
async def test_several_operations_report_in_order(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "one").write_text("1")
    (tmp_path / "two").write_text("22")
    results = await sandbox.sync_in(
        op(FileMapping("file", str(tmp_path / "one"), f"{W}/one"), oid="first"),
        op(
            FileMapping("file", str(tmp_path / "one"), f"{W}/1"),
            FileMapping("file", str(tmp_path / "two"), f"{W}/2"),
            oid="second",
        ),
        op(oid="empty"),
    )
    assert results == [
        SyncOperationResult("first", 1, 1),
        SyncOperationResult("second", 2, 3),
        SyncOperationResult("empty", 0, 0),
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        ("file", "missing", "CreateOS transfer source is not a readable host file."),
        ("file", "a-dir", "CreateOS transfer source is not a readable host file."),
        ("directory", "a-file", "CreateOS transfer source is not a readable host directory."),
        ("directory", "missing", "CreateOS transfer source is not a readable host directory."),
    ],
)
async def test_inbound_source_must_match_its_kind(
    sandbox: Sandbox, tmp_path: Path, kind: str, name: str, message: str
) -> None:
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-file").write_text("x")
    before = len(sandbox.fake.journal.requests())
    with pytest.raises(CreateosError) as info:
        await sandbox.sync_in(op(FileMapping(kind, str(tmp_path / name), f"{W}/t")))
    assert str(info.value) == message
    assert len(sandbox.fake.journal.requests()) == before
