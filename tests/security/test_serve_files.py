"""Files serve writes: a link planted where ``serve`` writes never redirects its writes.

``--print-env FILE`` wrote ``.FILE.<pid>.partial`` (a name anyone can predict from the pid)
without ``O_EXCL``/``O_NOFOLLOW``: a symlink planted there by another user of a shared folder
made ``serve`` write its keys into the link's target. ``--state-dir DIR`` opened its probe
(``.write-probe``), its lock and its database the same way. Each attack plants the link
before ``serve`` starts and checks that the link's target is untouched.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.reliability

_SERVE = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--quiet"]
_SECRET = "the user's own file, which must not change\n"


@pytest.fixture(name="victim")
def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.write_text(_SECRET)
    victim.chmod(0o644)
    return victim


def _untouched(victim: Path) -> bool:
    return victim.read_text() == _SECRET and stat.S_IMODE(victim.stat().st_mode) == 0o644


def _start_up_lines(process: subprocess.Popen[str]) -> list[str]:
    """``serve``'s lines up to its control key (``[]`` if it exits first)."""
    assert process.stdout is not None
    lines = []
    while line := process.stdout.readline():
        lines.append(line.rstrip("\n"))
        if line.startswith("control key: "):
            return lines
    return []


def test_print_env_never_writes_through_a_link_planted_at_its_partial_name(
    tmp_path: Path, victim: Path
) -> None:
    shared = tmp_path / "shared"  # a folder others may write in (/tmp, $RUNNER_TEMP)
    shared.mkdir(mode=0o777)
    env = shared / "createos.env"
    process = subprocess.Popen(
        [*_SERVE, "--print-env", str(env)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The name serve wrote through: planted before serve gets anywhere near writing it.
        (shared / f".createos.env.{process.pid}.partial").symlink_to(victim)
        lines = _start_up_lines(process)
        assert lines, process.stderr.read() if process.stderr else ""
        key = next(line for line in lines if line.startswith("export CREATEOS_API_KEY="))
        assert _untouched(victim)
        assert key + "\n" in env.read_text()
        assert not env.is_symlink()
        assert stat.S_IMODE(env.stat().st_mode) == 0o600
    finally:
        process.kill()
        process.communicate()


@pytest.mark.parametrize("name", [".write-probe", "lock"])
def test_a_state_directory_never_writes_through_a_planted_link(
    tmp_path: Path, victim: Path, name: str
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / name).symlink_to(victim)
    process = subprocess.Popen(
        [*_SERVE, "--state-dir", str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = _start_up_lines(process)
        if name == "lock":  # a name the fake keeps: refused, with the reason
            assert lines == []
            _out, err = process.communicate(timeout=30)
            assert process.returncode == 2
            assert err == (
                f"createos-fake: state directory {state} holds lock that is a symlink or not "
                "a regular file; the fake writes only files of its own there: remove it\n"
            )
        else:  # the probe's name is random now: the planted one is never used
            assert lines
        assert _untouched(victim)
    finally:
        process.kill()
        process.communicate()


def test_a_state_database_link_never_creates_its_target(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    elsewhere = tmp_path / "created-through-the-link"
    (state / "state.sqlite3").symlink_to(elsewhere)
    result = subprocess.run(
        [*_SERVE, "--state-dir", str(state)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr == (
        f"createos-fake: state directory {state} holds state.sqlite3 that is a symlink or not "
        "a regular file; the fake writes only files of its own there: remove it\n"
    )
    assert not os.path.lexists(elsewhere)
