"""GNU fidelity of the sandbox's realpath and tar, as the provider's file sync uses them."""

from __future__ import annotations

import asyncio
import io
import re
import tarfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_server.clock import VirtualClock
from fake_server.runtime.bashkit import CommandRegistry, SandboxDisk, Shell

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass
class Box:
    disk: SandboxDisk
    shell: Shell

    async def run(self, argv: Sequence[str], *, cwd: str | None = None) -> Result:
        out: list[bytes] = []
        err: list[bytes] = []

        async def to_out(data: bytes) -> None:
            out.append(data)

        async def to_err(data: bytes) -> None:
            err.append(data)

        code = await self.shell.run(argv, cwd=cwd, on_stdout=to_out, on_stderr=to_err)
        return Result(code, b"".join(out).decode(), b"".join(err).decode())

    async def sh(self, script: str) -> Result:
        return await self.run(["/bin/bash", "-lc", script])


@pytest_asyncio.fixture
async def box() -> AsyncIterator[Box]:
    clock = VirtualClock()
    disk = SandboxDisk()
    yield Box(disk, Shell(disk, clock, CommandRegistry()))
    clock.close()


# -- the provider's remote guard --------------------------------------------------------------


@pytest.mark.asyncio
async def test_remote_guard_and_inbound_file_steps(box: Box) -> None:
    box.disk.write_file("/paperclip-workspace/.keep", b"")
    box.disk.write_file("/tmp/scratch", b"payload")
    guard = (
        'root=$(realpath /paperclip-workspace) && [ "$root" = /paperclip-workspace ] || exit 1\n'
        "resolved=$(realpath -m -- '/paperclip-workspace/new/dir/f.txt') || exit 1\n"
        'case "$resolved" in "$root"|"$root"/*) ;; *) exit 1;; esac\n'
        'mkdir -p -- "$(dirname -- "$resolved")" && chmod 640 /tmp/scratch '
        '&& mv -f -- /tmp/scratch "$resolved"'
    )
    result = await box.sh(guard)
    assert (result.code, result.stderr) == (0, "")
    assert box.disk.read_file("/paperclip-workspace/new/dir/f.txt") == b"payload"
    assert box.disk.mode("/paperclip-workspace/new/dir/f.txt") == 0o640
    assert not box.disk.exists("/tmp/scratch")

    box.disk.fs.symlink("/etc", "/paperclip-workspace/escape")
    escaped = await box.sh(
        "root=$(realpath /paperclip-workspace); "
        "resolved=$(realpath -m -- /paperclip-workspace/escape/passwd); "
        'case "$resolved" in "$root"/*) echo inside;; *) echo "outside $resolved"; exit 1;; esac'
    )
    assert (escaped.code, escaped.stdout) == (1, "outside /etc/passwd\n")


# -- realpath ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_realpath_follows_chains_and_relative_links(box: Box) -> None:
    fs = box.disk.fs
    box.disk.write_file("/data/real/file.txt", b"x")
    fs.symlink("real", "/data/rel")  # relative target
    fs.symlink("/data/rel", "/data/abs")  # chain: abs -> rel -> real
    fs.symlink("../data/abs/file.txt", "/tmp/f")
    result = await box.run(
        ["realpath", "/data/abs", "/data/abs/file.txt", "/tmp/f", "rel/./file.txt"], cwd="/data"
    )
    assert result.stdout == (
        "/data/real\n/data/real/file.txt\n/data/real/file.txt\n/data/real/file.txt\n"
    )
    assert result.code == 0


@pytest.mark.asyncio
async def test_realpath_missing_components_default_e_and_m(box: Box) -> None:
    box.disk.write_file("/data/real/file.txt", b"x")
    box.disk.fs.symlink("/data/real", "/data/link")
    last_missing = await box.run(["realpath", "/data/link/new"])
    assert (last_missing.code, last_missing.stdout) == (0, "/data/real/new\n")
    deeper = await box.run(["realpath", "/data/link/no/new"])
    assert deeper.code == 1
    assert deeper.stderr == "realpath: /data/link/no/new: No such file or directory\n"
    existing = await box.run(["realpath", "-e", "--", "/data/link/new"])
    assert existing.stderr == "realpath: /data/link/new: No such file or directory\n"
    missing = await box.run(["realpath", "-m", "--", "/data/link/no/../new/x", "/a/../../b"])
    assert (missing.code, missing.stdout) == (0, "/data/real/new/x\n/b\n")
    not_dir = await box.run(["realpath", "/data/real/file.txt/x"])
    assert not_dir.stderr == "realpath: /data/real/file.txt/x: Not a directory\n"


@pytest.mark.asyncio
async def test_realpath_symlink_loop_fails(box: Box) -> None:
    box.disk.fs.mkdir("/loop")
    box.disk.fs.symlink("b", "/loop/a")
    box.disk.fs.symlink("a", "/loop/b")
    for flag in ("", "-m"):
        result = await box.run(["realpath", *([flag] if flag else []), "/loop/a/x"])
        assert result.code == 1
        assert result.stderr == "realpath: /loop/a/x: Too many levels of symbolic links\n"


# -- tar --------------------------------------------------------------------------------------


def _tree(disk: SandboxDisk) -> None:
    disk.write_file("/src/top.txt", b"top", mode=0o640)
    disk.write_file("/src/bin/run.sh", b"#!/bin/sh\n", mode=0o755)
    disk.write_file("/src/logs/today.log", b"log")
    disk.write_file("/src/node_modules/pkg/index.js", b"js")
    disk.write_file("/src/notes.log", b"log")
    disk.fs.chmod("/src/bin", 0o700)
    disk.fs.symlink("top.txt", "/src/rel-link")
    disk.fs.symlink("/src/bin", "/src/abs-link")


def _members(disk: SandboxDisk, path: str) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(disk.read_file(path))) as archive:
        return {m.name: m for m in archive.getmembers()}


@pytest.mark.asyncio
async def test_tar_create_keeps_links_modes_and_dot_names(box: Box) -> None:
    _tree(box.disk)
    result = await box.sh("tar -cf /tmp/out.tar -C /src .")
    assert (result.code, result.stderr) == (0, "")
    members = _members(box.disk, "/tmp/out.tar")
    assert sorted(members) == [
        ".",
        "./abs-link",
        "./bin",
        "./bin/run.sh",
        "./logs",
        "./logs/today.log",
        "./node_modules",
        "./node_modules/pkg",
        "./node_modules/pkg/index.js",
        "./notes.log",
        "./rel-link",
        "./top.txt",
    ]
    assert members["./rel-link"].issym()
    assert members["./rel-link"].linkname == "top.txt"
    assert members["./abs-link"].issym()
    assert members["./abs-link"].linkname == "/src/bin"
    assert members["./top.txt"].mode == 0o640
    assert members["./bin"].isdir()
    assert members["./bin"].mode == 0o700
    assert members["./bin/run.sh"].mode == 0o755


@pytest.mark.asyncio
async def test_tar_excludes_use_gnu_unanchored_globs(box: Box) -> None:
    _tree(box.disk)
    result = await box.sh(
        "tar --exclude='*.log' --exclude=node_modules --exclude='bin/' -cf /tmp/x.tar -C /src ."
    )
    assert result.code == 0
    assert sorted(_members(box.disk, "/tmp/x.tar")) == [
        ".",
        "./abs-link",
        "./logs",
        "./rel-link",
        "./top.txt",
    ]


@pytest.mark.asyncio
async def test_tar_dereference_stores_link_targets(box: Box) -> None:
    _tree(box.disk)
    result = await box.sh("tar -h -cf /tmp/h.tar -C /src rel-link abs-link")
    assert result.code == 0
    members = _members(box.disk, "/tmp/h.tar")
    assert members["rel-link"].isfile()
    assert members["rel-link"].size == 3
    assert members["rel-link"].mode == 0o640
    assert members["abs-link"].isdir()
    assert "abs-link/run.sh" in members


@pytest.mark.asyncio
async def test_tar_round_trip_restores_links_modes_and_directories(box: Box) -> None:
    _tree(box.disk)
    result = await box.sh(
        "tar -cf /tmp/rt.tar -C /src . && mkdir -p /dst && tar -xf /tmp/rt.tar -C /dst"
    )
    assert (result.code, result.stderr) == (0, "")
    assert box.disk.fs.read_link("/dst/rel-link") == "top.txt"
    assert box.disk.fs.read_link("/dst/abs-link") == "/src/bin"
    assert box.disk.read_file("/dst/rel-link") == b"top"
    assert box.disk.mode("/dst/top.txt") == 0o640
    assert box.disk.mode("/dst/bin") == 0o700
    assert box.disk.mode("/dst/bin/run.sh") == 0o755
    assert box.disk.read_file("/dst/node_modules/pkg/index.js") == b"js"
    gz = await box.sh("tar -czf /tmp/rt.tgz -C /src top.txt && tar -tzf /tmp/rt.tgz")
    assert gz.stdout == "top.txt\n"


@pytest.mark.asyncio
async def test_tar_extract_strips_leading_slash_and_refuses_dotdot(box: Box) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("/abs.txt", "../evil.txt", "ok/../../evil2.txt", "fine.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            archive.addfile(info, io.BytesIO(b"hi"))
    box.disk.write_file("/tmp/bad.tar", buffer.getvalue())
    box.disk.fs.mkdir("/dst")
    result = await box.sh("tar -xf /tmp/bad.tar -C /dst")
    assert result.code == 2
    assert result.stderr == (
        "tar: Removing leading `/' from member names\n"
        "tar: ../evil.txt: Member name contains '..'\n"
        "tar: ok/../../evil2.txt: Member name contains '..'\n"
        "tar: Exiting with failure status due to previous errors\n"
    )
    assert box.disk.read_file("/dst/abs.txt") == b"hi"
    assert box.disk.read_file("/dst/fine.txt") == b"hi"
    assert not box.disk.exists("/evil.txt")
    assert not box.disk.exists("/evil2.txt")
    assert not box.disk.exists("/abs.txt")


@pytest.mark.asyncio
async def test_tar_errors_are_gnu_shaped(box: Box) -> None:
    missing = await box.sh("tar -cf /tmp/a.tar -C / nope")
    assert missing.code == 2
    assert missing.stderr == (
        "tar: nope: Cannot stat: No such file or directory\n"
        "tar: Exiting with failure status due to previous errors\n"
    )
    garbage = await box.sh("echo garbage > /tmp/g.tar; tar -xf /tmp/g.tar -C /tmp")
    assert garbage.code == 2
    assert garbage.stderr == (
        "tar: This does not look like a tar archive\ntar: Error is not recoverable: exiting now\n"
    )
    no_dir = await box.sh("tar -cf /tmp/b.tar -C /nope .")
    assert no_dir.code == 2
    assert no_dir.stderr == (
        "tar: /nope: Cannot open: No such file or directory\n"
        "tar: Error is not recoverable: exiting now\n"
    )
    assert not box.disk.exists("/tmp/b.tar")
    usage = await box.sh("tar -q")
    assert usage.code == 2
    assert usage.stderr.startswith("tar: invalid option -- 'q'\n")


# -- robustness -------------------------------------------------------------------------------

_WORDS = st.sampled_from(
    [
        "-c", "-x", "-t", "-f", "-C", "-h", "-z", "-v", "-cf", "-xzf", "--exclude", "--exclude=*",
        "--file=/tmp/a.tar", "--strip-components=1", "-m", "-e", "-s", "-q", "--", "-", ".",
        "..", "/", "/tmp", "/tmp/a.tar", "/w", "/w/l", "nope", "", "*", "1", "0", "-1", "2m",
        "x\ny", "é", "-k", "-xf", "-tvf", "/w/l", "--keep-old-files", "a/../b",
    ]
)  # fmt: skip


_COMMANDS = st.sampled_from(["tar", "realpath", "sleep", "timeout 1 sleep", "cat", "head"])
_ARGS = st.lists(_WORDS, max_size=6)


def _check_no_crash(command: str, args: list[str]) -> None:
    async def scenario() -> Result:
        clock = VirtualClock()
        disk = SandboxDisk()
        disk.write_file("/w/f", b"data")
        disk.fs.symlink("/w", "/w/l")
        try:
            box = Box(disk, Shell(disk, clock, CommandRegistry()))
            quoted = " ".join("'" + a.replace("'", "'\"'\"'") + "'" for a in args)
            return await asyncio.wait_for(
                # stdout may be an archive (``tar -c ..``): only the status and stderr matter.
                box.sh(f"cd /w; tar -cf /tmp/a.tar f; {command} {quoted} >/dev/null"),
                10,
            )
        finally:
            clock.close()

    result = asyncio.run(scenario())
    assert result.code in {0, 1, 2, 124, 125, 127}
    assert re.search(r"\w(Error|Exception):|Traceback", result.stderr) is None  # no Python leak
    assert "Unexpected error" not in result.stderr


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(command=_COMMANDS, args=_ARGS)
def test_overridden_commands_never_crash_on_any_arguments(command: str, args: list[str]) -> None:
    """A few examples here (the suite's hypothesis profile); many in the reliability twin."""
    _check_no_crash(command, args)


@pytest.mark.reliability
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command=_COMMANDS, args=_ARGS)
def test_overridden_commands_never_crash_on_many_arguments(command: str, args: list[str]) -> None:
    _check_no_crash(command, args)
