"""The seccomp filter's ``chown`` rules: success that changes nothing, where the sandbox's root
is the only id (``ignore_chown``); everywhere else ``chown`` is left to the kernel."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.containment import seccomp
from fake_server.runtime.process.containment.bwrap import bwrap_path

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [
    pytest.mark.skipif(seccomp.available() is not None, reason="libseccomp is not loadable"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a chown that works needs root"),
]

_CHOWN = "import os, sys; os.chown(sys.argv[1], 4321, 4321); os.lchown(sys.argv[1], 4321, -1)"


def _chown_in_child(path: Path, *, ignore_chown: bool) -> tuple[int, int]:
    """Run ``chown`` in a child with the sandbox's filter; the file's owner after."""
    subprocess.run(
        [sys.executable, "-c", _CHOWN, str(path)],
        check=True,
        preexec_fn=seccomp.installer(ignore_chown=ignore_chown),
    )
    found = os.stat(path)
    return found.st_uid, found.st_gid


def test_chown_answers_success_and_changes_nothing_where_root_is_the_only_id(
    tmp_path: Path,
) -> None:
    target = tmp_path / "f"
    target.write_text("x")
    assert _chown_in_child(target, ignore_chown=True) == (0, 0)
    assert _chown_in_child(target, ignore_chown=False) == (4321, 4321)


def test_the_builds_filter_has_the_chown_rules_alone(tmp_path: Path) -> None:
    """The build of a tree of one id (``debian.alone``) mounts and unshares: under its filter
    (bwrap installs it, as for the build) ``chown`` does nothing and ``unshare`` works."""
    target = tmp_path / "f"
    target.write_text("x")
    unshare = "import ctypes; done = ctypes.CDLL(None).unshare(0x04000000)"  # CLONE_NEWUTS
    script = f"{_CHOWN}; {unshare}; print('unshared' if done == 0 else 'refused')"
    fd = seccomp.program_fd(ignore_chown=True, confine=False)
    try:
        done = subprocess.run(
            [bwrap_path(), "--bind", "/", "/", "--seccomp", str(fd), "--", sys.executable, "-c",
             script, str(target)],
            capture_output=True, text=True, check=False, pass_fds=(fd,),
        )  # fmt: skip
    finally:
        os.close(fd)
    assert done.stdout == "unshared\n", done.stderr
    assert (target.stat().st_uid, target.stat().st_gid) == (0, 0)
