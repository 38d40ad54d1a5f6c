"""The host ids of a process-runtime sandbox's users: the range, and files moved into it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process import idmap
from fake_server.runtime.process.rootdir import shift_owners

if TYPE_CHECKING:
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
