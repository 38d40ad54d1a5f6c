"""Files ``serve`` writes on the host never go through a link someone planted.

``--print-env FILE`` once wrote ``.FILE.<pid>.partial`` without ``O_EXCL``/``O_NOFOLLOW``: a
symlink planted there made ``serve`` write its keys into the link's target. The state
directory's probe, lock and database were opened the same way. ``tests/security/
test_serve_files.py`` repeats the attacks against a real ``serve``.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

import pytest

from fake_server.__main__ import write_env
from fake_server.hostfiles import NotOwnFile, create_new, open_own, write_whole
from fake_server.persist.store import DB_NAME, StateDirError, Store

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(name="victim")
def _victim(tmp_path: Path) -> Path:
    """A file of the user's that a planted link points at: it must never change."""
    victim = tmp_path / "victim"
    victim.write_text("the user's own file\n")
    return victim


def _untouched(victim: Path) -> bool:
    return victim.read_text() == "the user's own file\n" and not victim.stat().st_mode & 0o7000


def test_print_env_ignores_a_link_planted_at_its_old_partial_name(
    tmp_path: Path, victim: Path
) -> None:
    env = tmp_path / "shared" / "createos.env"
    env.parent.mkdir()
    (env.parent / f".createos.env.{os.getpid()}.partial").symlink_to(victim)
    write_env(env, "export KEY=secret\n")
    assert _untouched(victim)
    assert env.read_text() == "export KEY=secret\n"
    assert stat.S_IMODE(env.lstat().st_mode) == 0o600
    assert not env.is_symlink()
    # Nothing else was left in the folder but the planted link itself.
    assert sorted(p.name for p in env.parent.iterdir()) == [
        f".createos.env.{os.getpid()}.partial",
        "createos.env",
    ]


def test_a_link_at_the_target_itself_is_replaced_not_followed(tmp_path: Path, victim: Path) -> None:
    target = tmp_path / "out.env"
    target.symlink_to(victim)
    write_whole(target, b"new\n")
    assert _untouched(victim)
    assert (target.is_symlink(), target.read_bytes()) == (False, b"new\n")


def test_a_new_file_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        fd, path = create_new(tmp_path, ".probe-")
    finally:
        os.umask(old)
    os.close(fd)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.name.startswith(".probe-")


def test_a_kept_file_refuses_a_link_or_a_fifo_without_waiting(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "link").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo")
    for name in ("link", "fifo"):
        with pytest.raises(NotOwnFile):
            open_own(tmp_path / name, os.O_RDWR | os.O_CREAT)
    assert _untouched(victim)
    fd = open_own(tmp_path / "lock", os.O_RDWR | os.O_CREAT)
    os.close(fd)
    assert stat.S_IMODE((tmp_path / "lock").stat().st_mode) == 0o600


@pytest.mark.parametrize("name", ["lock", DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm"])
def test_a_state_directory_with_a_link_at_a_name_the_fake_writes_is_refused(
    tmp_path: Path, victim: Path, name: str
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / name).symlink_to(victim)
    with pytest.raises(StateDirError) as caught:
        Store(state)
    assert str(caught.value) == (
        f"state directory {state} holds {name} that is a symlink or not a regular file; the "
        "fake writes only files of its own there: remove it"
    )
    assert _untouched(victim)


def test_a_state_directory_probe_never_writes_through_a_planted_link(
    tmp_path: Path, victim: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / ".write-probe").symlink_to(victim)  # the probe's old, fixed name
    store = Store(state)
    store.close()
    assert _untouched(victim)
    assert stat.S_IMODE((state / DB_NAME).stat().st_mode) == 0o600
    assert stat.S_IMODE((state / "lock").stat().st_mode) == 0o600
