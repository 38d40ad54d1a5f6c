"""Host-side archives: links kept as links, exclusions, and strict validation before extraction."""

from __future__ import annotations

import io
import os
import tarfile
from typing import TYPE_CHECKING

import pytest

from pytest_createos.provider._archive import (
    build_archive,
    extract_archive,
    is_excluded,
    validate_archive,
)
from pytest_createos.provider._errors import CreateosError

if TYPE_CHECKING:
    from pathlib import Path

UNSAFE = "CreateOS archive contains unsafe entries or exceeds the extraction limit."


def _tar(path: Path, *entries: tarfile.TarInfo, data: dict[str, bytes] | None = None) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for info in entries:
            payload = (data or {}).get(info.name)
            if payload is not None:
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            else:
                tar.addfile(info)
    return path


def _entry(
    name: str, kind: bytes = tarfile.REGTYPE, link: str = "", size: int = 0
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = size
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info


@pytest.mark.parametrize(
    ("name", "patterns", "excluded"),
    [
        ("./node_modules", ["node_modules"], True),
        ("./node_modules/x/y.js", ["node_modules"], True),
        ("./a/node_modules/", ["node_modules"], True),
        ("./a/node_modules_x", ["node_modules"], False),
        ("./build.log", ["*.log"], True),
        ("./sub/deep/build.log", ["*.log"], True),
        ("./sub/logs", ["*.log"], False),
        ("./.git/config", [".git"], True),
        ("./src/a.py", ["src/*.py"], True),
        ("./src/x/a.py", ["src/*.py"], False),
        ("./a1", ["a?"], True),
        ("./ab", ["a[!b]"], False),
        ("./ac", ["a[!b]"], True),
        (".", ["*"], False),
        ("./keep", [], False),
    ],
)
def test_exclusion_matching(name: str, patterns: list[str], excluded: bool) -> None:
    assert is_excluded(name, patterns) is excluded


def test_build_keeps_links_modes_and_skips_excluded(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub" / "deep").mkdir(parents=True)
    (src / "sub" / "deep" / "run.sh").write_text("#!/bin/sh\n")
    (src / "sub" / "deep" / "run.sh").chmod(0o750)
    (src / "a.txt").write_text("a")
    (src / "skip.log").write_text("log")
    (src / "cache").mkdir()
    (src / "cache" / "big").write_text("x")
    (src / "link").symlink_to("sub/deep/run.sh")
    (src / "outside").symlink_to("/etc/passwd")
    os.mkfifo(src / "fifo")
    archive = tmp_path / "out.tar"
    files = build_archive(src, archive, ["*.log", "cache"])
    assert files == 2
    assert oct(archive.stat().st_mode & 0o777) == oct(0o600)
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert sorted(members) == [
        ".",
        "./a.txt",
        "./link",
        "./outside",
        "./sub",
        "./sub/deep",
        "./sub/deep/run.sh",
    ]
    assert members["./link"].issym()
    assert members["./link"].linkname == "sub/deep/run.sh"
    assert members["./outside"].linkname == "/etc/passwd"
    assert members["./sub/deep/run.sh"].mode & 0o777 == 0o750
    with pytest.raises(FileExistsError):
        build_archive(src, archive)


def test_round_trip_extracts_validated_archive(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f").write_bytes(b"\x00\xffbinary")
    (src / "l").symlink_to("d/f")
    archive = tmp_path / "a.tar"
    build_archive(src, archive)
    assert validate_archive(archive) == 1
    dest = tmp_path / "dest"
    dest.mkdir()
    extract_archive(archive, dest)
    assert (dest / "d" / "f").read_bytes() == b"\x00\xffbinary"
    assert os.readlink(dest / "l") == "d/f"


@pytest.mark.parametrize(
    "entries",
    [
        [_entry("/abs")],
        [_entry("../up")],
        [_entry("a/../../up")],
        [_entry("a\\b")],
        [_entry("fifo", tarfile.FIFOTYPE)],
        [_entry("dev", tarfile.CHRTYPE)],
        [_entry("l", tarfile.SYMTYPE, "")],
        [_entry("l", tarfile.SYMTYPE, "/etc")],
        [_entry("l", tarfile.SYMTYPE, "..")],
        [_entry("a/l", tarfile.SYMTYPE, "../../x")],
        [_entry("l", tarfile.SYMTYPE, "a\\b")],
        [_entry("h", tarfile.LNKTYPE, "../x")],
        [_entry("h", tarfile.LNKTYPE, "/etc/passwd")],
        [_entry(".", tarfile.SYMTYPE, "x")],
        # Escapes that only show when the archive's own links are followed:
        [
            _entry("d", tarfile.DIRTYPE),
            _entry("d/l", tarfile.SYMTYPE, ".."),
            _entry("d/l/m", tarfile.SYMTYPE, ".."),
        ],
        [_entry("l", tarfile.SYMTYPE, "sub/.."), _entry("x", tarfile.SYMTYPE, "l/..")],
        [_entry("up", tarfile.SYMTYPE, "a"), _entry("a", tarfile.SYMTYPE, "up")],
        [_entry("big", size=11), _entry("big2", size=0)],
    ],
)
def test_unsafe_archives_are_rejected(tmp_path: Path, entries: list[tarfile.TarInfo]) -> None:
    data = {e.name: b"x" * e.size for e in entries if e.size}
    archive = _tar(tmp_path / "bad.tar", *entries, data=data)
    with pytest.raises(CreateosError) as info:
        validate_archive(archive, limit=10)
    assert str(info.value) == UNSAFE


def test_nul_in_a_name_or_link_is_rejected(tmp_path: Path) -> None:
    # Only a PAX header can carry a NUL in a name.
    for key in ("path", "linkpath"):
        entry = _entry("x", tarfile.SYMTYPE, "y")
        entry.pax_headers = {key: "a\x00b"}
        archive = _tar(tmp_path / f"{key}.tar", entry)
        with pytest.raises(CreateosError) as info:
            validate_archive(archive)
        assert str(info.value) == UNSAFE


def test_size_limit_counts_declared_sizes(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "ok.tar",
        _entry("a", size=5),
        _entry("b", size=5),
        data={"a": b"12345", "b": b"12345"},
    )
    assert validate_archive(archive, limit=10) == 2
    with pytest.raises(CreateosError) as info:
        validate_archive(archive, limit=9)
    assert str(info.value) == UNSAFE


@pytest.mark.parametrize("payload", [b"", b"not a tar at all" * 100, b"\x00" * 100])
def test_garbage_is_unsafe_not_a_crash(tmp_path: Path, payload: bytes) -> None:
    archive = tmp_path / "junk.tar"
    archive.write_bytes(payload)
    with pytest.raises(CreateosError) as info:
        validate_archive(archive)
    assert str(info.value) == UNSAFE


def test_safe_inner_links_are_accepted(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "ok.tar",
        _entry("d", tarfile.DIRTYPE),
        _entry("d/f"),
        _entry("d/l", tarfile.SYMTYPE, "f"),
        _entry("up", tarfile.SYMTYPE, "d/../d/f"),
        _entry("root", tarfile.SYMTYPE, "."),
        _entry("h", tarfile.LNKTYPE, "d/f"),
    )
    assert validate_archive(archive) == 1
    dest = tmp_path / "dest"
    dest.mkdir()
    extract_archive(archive, dest)
    assert os.readlink(dest / "d" / "l") == "f"
    assert (dest / "h").is_file()


def test_extraction_refuses_host_links_leading_out(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "ok.tar", _entry("esc/f"), data={"esc/f": b"x"})
    assert validate_archive(archive) == 1
    dest = tmp_path / "dest"
    dest.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (dest / "esc").symlink_to(elsewhere)
    with pytest.raises(CreateosError) as info:
        extract_archive(archive, dest)
    assert str(info.value) == UNSAFE
    assert list(elsewhere.iterdir()) == []


def test_extraction_keeps_directory_modes_but_not_the_roots(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "private").mkdir(parents=True)
    (src / "private").chmod(0o750)
    (src / "shared").mkdir()
    (src / "shared").chmod(0o777)
    src.chmod(0o755)
    archive = tmp_path / "a.tar"
    build_archive(src, archive)
    validate_archive(archive)
    dest = tmp_path / "dest"
    dest.mkdir(mode=0o700)
    dest.chmod(0o700)
    extract_archive(archive, dest)
    assert (dest / "private").stat().st_mode & 0o777 == 0o750
    assert (dest / "shared").stat().st_mode & 0o777 == 0o755  # no group/other write
    assert dest.stat().st_mode & 0o777 == 0o700
