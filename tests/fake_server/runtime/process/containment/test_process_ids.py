"""The host ids of a process-runtime sandbox's users: the range, and files moved into it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
from typing import TYPE_CHECKING

import pytest

from fake_server.clock import VirtualClock
from fake_server.runtime.process import ProcessRuntime
from fake_server.runtime.process.containment import confine, idmap
from fake_server.runtime.process.images.system import System
from fake_server.runtime.process.storage.rootdir import shift_owners

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def test_the_range_steps_past_subordinate_ranges_and_named_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = idmap.DEFAULT_BASE
    files = {
        "/etc/subuid": [["alice", str(base + 10), "65536"]],  # overlaps the default range
        "/etc/subgid": [],
        "/etc/passwd": [["bob", "x", str(base + idmap.SIZE + 5), "0", "", "/", "/bin/sh"]],
        "/etc/group": [],
    }
    monkeypatch.setattr(idmap, "_lines", lambda name: files[name])
    assert idmap.host_range.__wrapped__() == idmap.IdRange(base + 2 * idmap.SIZE)
    files["/etc/subuid"] = files["/etc/passwd"] = []
    assert idmap.host_range.__wrapped__() == idmap.IdRange(base)


def test_the_range_maps_all_65536_ids() -> None:
    ids = idmap.IdRange(idmap.DEFAULT_BASE)
    assert ids.map_line() == f"0 {idmap.DEFAULT_BASE} 65536\n"
    assert ids.owner == (idmap.DEFAULT_BASE, idmap.DEFAULT_BASE)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to other ids needs root")
def test_files_a_version_before_id_ranges_kept_move_into_the_range(tmp_path: Path) -> None:
    """A kept disk's upper layer from before id ranges holds host ids 0-65535: each moves to
    the same id of the range, once (a second pass finds the top already moved)."""
    top = tmp_path / "upper"
    (top / "home").mkdir(parents=True)
    (top / "home" / "user").write_text("x")
    os.chown(top / "home" / "user", 1000, 1000)
    os.symlink("/etc/passwd", top / "link")
    base = idmap.DEFAULT_BASE
    shift_owners(top, base)
    owners = {
        path.relative_to(tmp_path).as_posix(): (os.lstat(path).st_uid, os.lstat(path).st_gid)
        for path in [top, top / "home", top / "home" / "user", top / "link"]
    }
    assert owners == {
        "upper": (base, base),
        "upper/home": (base, base),
        "upper/home/user": (base + 1000, base + 1000),
        "upper/link": (base, base),
    }
    shift_owners(top, base)
    assert os.lstat(top / "home" / "user").st_uid == base + 1000


_NO_SUBUID = "/etc/subuid gives dev no range of 65535 ids"
_NO_SUBGID = "/etc/subgid gives dev no range of 65535 ids"
#: Ranges by name and by uid, as ``newuidmap`` matches them.
_RANGES = {
    "/etc/subuid": [["dev", "200000", "65536"]],
    "/etc/subgid": [["5000", "300000", "70000"]],
}
_REFUSED = "newuidmap failed: newuidmap: uid range [0-1000) -> [200000-201000) not allowed"


def _unprivileged(
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, list[list[str]]],
    *,
    named: bool = True,
    helpers: bool = True,
) -> idmap.Subordinate | idmap.OwnId:
    """``idmap.unprivileged()`` as uid 5000 (gid 5001) with ``files`` for the subordinate
    ranges, a name or none, and ``newuidmap``/``newgidmap`` present (setuid) or not."""

    def getpwuid(uid: int) -> pwd.struct_passwd:
        if not named:
            raise KeyError(uid)
        return pwd.struct_passwd(("dev", "x", uid, 5001, "", "/home/dev", "/bin/sh"))

    monkeypatch.setattr(idmap.os, "getuid", lambda: 5000)
    monkeypatch.setattr(idmap.os, "getgid", lambda: 5001)
    monkeypatch.setattr(idmap.pwd, "getpwuid", getpwuid)
    monkeypatch.setattr(idmap, "_lines", lambda name: files.get(name, []))
    monkeypatch.setattr(
        idmap.shutil, "which", lambda program, path=None: f"/usr/bin/{program}" if helpers else None
    )
    return idmap.unprivileged.__wrapped__()


def test_an_unprivileged_caller_without_a_name_maps_its_own_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _unprivileged(monkeypatch, {}, named=False) == idmap.OwnId(
        5000, 5001, "uid 5000 has no /etc/passwd entry, which newuidmap needs"
    )


@pytest.mark.parametrize(
    ("subuid", "subgid", "why"),
    [
        ([], [["dev", "200000", "65536"]], _NO_SUBUID),
        ([["dev", "200000", "65536"]], [["dev", "300000", "1000"]], _NO_SUBGID),
        ([["eve", "200000", "65536"]], [["dev", "300000", "65536"]], _NO_SUBUID),
    ],
)  # fmt: skip
def test_an_unprivileged_caller_without_ranges_maps_its_own_id(
    monkeypatch: pytest.MonkeyPatch, subuid: list[list[str]], subgid: list[list[str]], why: str
) -> None:
    files = {"/etc/subuid": subuid, "/etc/subgid": subgid}
    assert _unprivileged(monkeypatch, files) == idmap.OwnId(5000, 5001, why)


def test_without_newuidmap_the_callers_own_id_is_mapped_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {
        "/etc/subuid": [["dev", "200000", "65536"]],
        "/etc/subgid": [["5000", "300000", "70000"]],
    }
    found = _unprivileged(monkeypatch, files, helpers=False)
    assert found == idmap.OwnId(5000, 5001, "newuidmap is missing (Debian's uidmap package)")


def test_a_refused_trial_map_falls_back_to_the_callers_own_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ranges and helpers present, but ``newuidmap`` refuses (a range another user holds):
    its last line says why."""
    files = {
        "/etc/subuid": [["dev", "200000", "65536"]],
        "/etc/subgid": [["5000", "300000", "70000"]],
    }
    monkeypatch.setattr(idmap, "_helper_missing", lambda: None)
    tried: list[idmap.Subordinate] = []

    @contextlib.contextmanager
    def unmapped() -> Iterator[int]:
        yield 4242

    def refuse(pid: int, ids: idmap.Subordinate) -> None:
        tried.append(ids)
        raise OSError(
            "newuidmap failed: newuidmap: uid range [0-1000) -> [200000-201000) not allowed"
        )

    monkeypatch.setattr(idmap, "unmapped", unmapped)
    monkeypatch.setattr(idmap, "map_user_namespace", refuse)
    found = _unprivileged(monkeypatch, files)
    assert tried == [idmap.Subordinate(5000, 5001, 200000, 300000, 65536)]
    assert found == idmap.OwnId(5000, 5001, _REFUSED)
    monkeypatch.setattr(idmap, "map_user_namespace", lambda pid, ids: None)
    assert _unprivileged(monkeypatch, files) == idmap.Subordinate(5000, 5001, 200000, 300000, 65536)


def test_the_subordinate_map_gives_the_caller_uid_1000_and_the_rest_its_ranges() -> None:
    ids = idmap.Subordinate(5000, 5001, 200000, 300000)
    assert ids.extents().args("uid") == [
        "0", "200000", "1000", "1000", "5000", "1", "1001", "201000", "64535",
    ]  # fmt: skip
    assert ids.extents().args("gid") == [
        "0", "300000", "1000", "1000", "5001", "1", "1001", "301000", "64535",
    ]  # fmt: skip


@pytest.mark.skipif(os.geteuid() != 0, reason="the layout's own range needs root")
def test_the_layout_as_root_maps_user_sandbox_into_the_range(tmp_path: Path) -> None:
    """``--image-fallback`` as root: user ``sandbox`` was the host's root (``1000 0 1``); it
    is the range's id 1000 now, owning the layout and what it writes, and a file of the
    host's root in its home stays unwritable; the seccomp filter holds in the init and in
    each exec. The sandbox's directory is under pytest's (root-only) temporary directory:
    the init reaches it through its own mount namespace."""
    runtime = ProcessRuntime(base=tmp_path / "sandboxes", system=System(missing="test"))
    ids = idmap.host_range()
    assert runtime.layout_map == ids
    assert confine.describe(None, ids) == (
        f"containment: user sandbox (uid 1000) is host id {ids.base + 1000}, the sandbox's "
        f"ids (root included) host ids {ids.base}-{ids.base + 65535}; /proc masked, a seccomp "
        "filter; no disk size per sandbox (the host-directory layout)"
    )
    try:
        machine = runtime.new_sandbox("sb")
        home = machine.directory / "home" / "sandbox"
        planted = home / "roots"
        planted.write_text("root's\n")
        os.chown(planted, 0, 0)
        output: list[bytes] = []

        async def sink(data: bytes) -> None:
            output.append(data)

        async def run() -> int:
            script = (
                "id -u; cat /proc/self/uid_map; echo made > ~/made; stat -c %u ~/roots\n"
                "echo x >> ~/roots\necho 1 > /proc/sys/kernel/core_uses_pid\n"
                "unshare -U true\ngrep -h ^Seccomp: /proc/1/status /proc/self/status\n"
            )
            return await machine.runner(VirtualClock()).run(
                ["sh", "-c", f"exec 2>&1\n{script}"], on_stdout=sink, on_stderr=sink
            )

        assert asyncio.run(run()) == 0
        assert b"".join(output).decode().split("\n") == [
            "1000",
            f"{0:>10} {ids.base:>10} {65536:>10}",
            "65534",
            "sh: 3: cannot create /home/sandbox/roots: Permission denied",
            "sh: 4: cannot create /proc/sys/kernel/core_uses_pid: Read-only file system",
            "unshare: unshare failed: Operation not permitted",
            "Seccomp:\t2",
            "Seccomp:\t2",
            "",
        ]
        made = os.stat(home / "made")
        assert (made.st_uid, made.st_gid) == ids.layout_owner
        assert planted.read_text() == "root's\n"
    finally:
        runtime.close()
