"""lxcfs for sandboxes' ``/proc`` (``procview``): started and stopped with nothing left
behind, and the mount of one whose fake was killed swept by the next fake."""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.containment import procview
from fake_server.runtime.process.storage.rootdir import FakeRoot
from tests._needs import needs

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = needs(procview.unavailable(), "apt-get install lxcfs (as root, with /dev/fuse)")


def _mounted(path: Path) -> bool:
    with open("/proc/self/mountinfo", "rb") as handle:
        return any(line.split(b" ")[4] == os.fsencode(path) for line in handle)


def test_a_view_serves_proc_files_and_leaves_nothing_at_close(tmp_path: Path) -> None:
    view = procview.ProcView(tmp_path / "lxcfs")
    assert _mounted(tmp_path / "lxcfs")
    binds = view.binds()
    assert binds[:3] == ["--ro-bind", str(tmp_path / "lxcfs/proc/meminfo"), "/proc/meminfo"]
    assert (tmp_path / "lxcfs/proc/meminfo").read_text().startswith("MemTotal:")
    view.close()
    view.close()  # idempotent
    assert not _mounted(tmp_path / "lxcfs")
    assert list(tmp_path.iterdir()) == []


def test_the_next_fake_sweeps_the_view_of_a_fake_that_was_killed(tmp_path: Path) -> None:
    dead = FakeRoot(tmp_path)
    view = procview.ProcView(dead.path / ".lxcfs")
    process = view._process
    assert process is not None
    os.kill(process.pid, signal.SIGKILL)  # as the fake's death would leave it: mounted, dead
    process.wait()
    assert process.stderr is not None
    process.stderr.close()
    os.close(dead._lock_fd or -1)  # the killed fake's lock goes with it
    assert _mounted(dead.path / ".lxcfs")
    with pytest.raises(OSError, match="not connected"):
        (dead.path / ".lxcfs/proc/meminfo").read_text()
    survivor = FakeRoot(tmp_path)
    try:
        assert survivor.removed_leftovers == 1
        assert not dead.path.exists()
        assert not _mounted(dead.path / ".lxcfs")
    finally:
        survivor.close()


def test_describe_names_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert procview.describe() == "proc: free, top and uptime show the sandbox's shape (lxcfs)"
    monkeypatch.setattr(procview.shutil, "which", lambda _name: None)
    assert procview.describe() == (
        "proc: free and top show the host's memory and CPUs "
        "(lxcfs is not installed (apt-get install lxcfs))"
    )
    with pytest.raises(OSError, match=r"^lxcfs is not installed$"):
        procview.ProcView(tmp_path / "lxcfs")
