"""Finding a process tree: through ``/proc/PID/task/*/children``, or a scan of ``/proc`` where
the kernel has no such file; both give the same levels."""

from __future__ import annotations

import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.sandbox import tree

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(name="shell_with_child")
def _shell_with_child() -> Iterator[subprocess.Popen[bytes]]:
    """``sh`` waiting on a ``sleep`` it started: a tree of two levels below the test process."""
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    end = time.monotonic() + 10
    while _program(child) != b"sleep":  # forked; exec of sleep follows (a real process's time)
        assert time.monotonic() < end
        time.sleep(0.001)
    yield proc
    for level in reversed(tree.descendants(proc.pid)):
        tree.send(level, 9)
    proc.kill()
    proc.wait()
    proc.stdout.close()


@pytest.mark.parametrize("children_files", [True, False], ids=["children-files", "proc-scan"])
def test_descendants_by_level(
    shell_with_child: subprocess.Popen[bytes],
    children_files: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not children_files:
        monkeypatch.setattr(tree, "_children_of", lambda pid: None)
    levels = tree.descendants(shell_with_child.pid)
    assert len(levels) == 1
    assert len(levels[0]) == 1
    assert _program(levels[0][0]) == b"sleep"
    assert tree.descendants(levels[0][0]) == []


def _program(pid: int) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read().split(b"\0")[0]


@pytest.fixture(name="no_pidfds")
def _no_pidfds(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parametrized: the kernel's pidfds, or a kernel without them (``wait_gone`` polls)."""
    if not request.param:

        def missing(pid: int, flags: int = 0) -> int:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(tree.os, "pidfd_open", missing)


@pytest.mark.parametrize("no_pidfds", [False, True], ids=["pidfds", "polled"], indirect=True)
def test_wait_gone_ends_when_the_last_process_does(no_pidfds: None) -> None:
    first = subprocess.Popen(["sleep", "30"])
    second = subprocess.Popen(["sleep", "30"])
    try:
        assert tree.wait_gone([first.pid, second.pid], 0.01) is False  # both still run
        first.kill()
        first.wait()
        assert tree.wait_gone([first.pid, second.pid], 0.01) is False  # one still runs
        second.kill()  # a zombie until reaped: it has ended
        assert tree.wait_gone([first.pid, second.pid], 30) is True
        assert second.poll() == -9
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("no_pidfds", [False, True], ids=["pidfds", "polled"], indirect=True)
def test_wait_gone_with_nothing_left_to_wait_for(no_pidfds: None) -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert tree.wait_gone([proc.pid], 0) is True  # reaped: no such process
    assert tree.wait_gone([], 0) is True
