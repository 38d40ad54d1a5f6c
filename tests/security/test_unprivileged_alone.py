"""devbox:1 as an unprivileged user without subordinate ids runs ``serve``: root inside is
the user, and the only id.

A user with no ``/etc/subuid`` range (here a uid without even a name, which ``newuidmap``
needs), pasta and a tree built for that user alone (``createos-fake image`` as that user;
here a copy of root's with every file the user's, ``_usertree``) gets sandboxes that boot
devbox:1: commands run as root inside on a copy-on-write root of their own (``userroot``),
``chown`` succeeds doing nothing (the seccomp filter's ``ignore_chown``) and apt downloads as
root (``debian.OWN_APT``), so ``apt-get install`` works. What cannot work with one id is
checked too: another user's credentials (``su``) are refused. The build itself
(``debian.alone``: mmdebstrap as root of a namespace of the user's id alone) runs here too,
with no package (the suite reaches no registry), so its hooks and owners are checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.net.nft import nft_path
from fake_server.runtime.process.net.usernet import pasta_path
from fake_server.runtime.process.storage.rootdir import TRASH
from tests._helpers import settled
from tests.security._unprivileged import (
    IMAGE_LINE_END,
    Unprivileged,
    as_user,
    free_id,
    restarted,
    serve_as,
)
from tests.security._usertree import tree_for

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(os.geteuid() != 0, reason="running serve as another user needs root"),
    pytest.mark.skipif(
        pasta_path() is None or nft_path() is None,
        reason="an unprivileged image needs passt and nftables (apt-get install passt nftables)",
    ),
]


@pytest.fixture(name="alone", scope="module")
def _alone() -> Iterator[Unprivileged]:
    """``serve`` as a user without subordinate ids, with a tree of its own."""
    uid = free_id(64_000)
    ids = idmap.OwnId(uid, uid, "none")

    yield from serve_as(uid, prepare=tree_for(ids))


def test_the_start_up_lines_say_root_is_the_caller_and_the_only_id(alone: Unprivileged) -> None:
    assert alone.line("containment: ") == (
        f"containment: root inside is your own id {alone.uid} on the host, and the only id "
        "(no subordinate ids: chown does nothing, apt runs as root); /proc masked, a seccomp "
        "filter; no disk size per sandbox (not root: no loop device)"
    )
    assert alone.line("images: ").endswith(IMAGE_LINE_END)


def test_root_inside_is_the_caller_alone(alone: Unprivileged) -> None:
    target = alone.target
    sandbox = target.create()
    code, out = target.sh(sandbox, "id -u; cat /etc/debian_version; cat /proc/self/uid_map")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "0"
    assert lines[1].startswith("13.")
    assert [line.split() for line in lines[2:]] == [["0", "0", "1"]]


def test_apt_installs_a_small_package_as_root(alone: Unprivileged) -> None:
    """apt downloads as root (it cannot drop to ``_apt``), dpkg's ``chown`` to the package's
    owners does nothing; the one test here that reaches past the machine (the Debian
    archive, through pasta)."""
    target = alone.target
    sandbox = target.create()
    code, out = target.sh(
        sandbox,
        "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null && "
        "apt-get install -y -qq --no-install-recommends hello >/dev/null 2>&1 && hello && "
        "stat -c '%U %u' /var/cache/apt/archives/partial",
        timeout=600,
    )
    assert (code, out) == (0, "Hello, world!\nroot 0\n"), out
    hello = alone.sandbox_dir(sandbox) / "upper/usr/bin/hello"
    assert (hello.stat().st_uid, hello.stat().st_gid) == (alone.uid, alone.uid)


def test_chown_does_nothing_and_other_users_credentials_are_refused(
    alone: Unprivileged,
) -> None:
    target = alone.target
    sandbox = target.create()
    code, out = target.sh(
        sandbox,
        "touch /root/f && chown 42:42 /root/f && stat -c '%u %g' /root/f && useradd -m dev && "
        "ls -dn /home/dev | cut -d' ' -f3,4 && su dev -c true; echo su=$?",
    )
    assert (code, out.splitlines()[:2]) == (0, ["0 0", "0 0"]), out
    assert out.splitlines()[-1] != "su=0", out


def test_the_file_api_a_fork_and_a_destroy(alone: Unprivileged) -> None:
    target = alone.target
    sandbox = target.create()
    put = target.api.put(
        f"/v1/sandboxes/{sandbox}/files", params={"path": "/root/up.txt"}, content=b"uploaded\n"
    )
    assert put.status_code in (200, 201, 204), put.text
    code, out = target.sh(sandbox, "cat /root/up.txt && echo mine > /root/f")
    assert (code, out) == (0, "uploaded\n"), out
    paused = target.api.post(f"/v1/sandboxes/{sandbox}/pause")
    assert paused.status_code in (200, 202), paused.text
    fork = target.api.post(f"/v1/sandboxes/{sandbox}/fork", json={})
    assert fork.status_code in (200, 201, 202), fork.text
    copy = fork.json()["data"]["id"]
    code, out = target.sh(copy, "cat /root/up.txt /root/f")
    assert (code, out) == (0, "uploaded\nmine\n"), out
    target.sandboxes.append(copy)
    directory = alone.sandbox_dir(sandbox)
    gone = target.api.delete(f"/v1/sandboxes/{sandbox}")
    assert gone.status_code in (200, 202, 204), gone.text
    assert not directory.exists()  # renamed at once, removed in the background
    assert settled(lambda: not list(directory.parent.glob(f"{TRASH}*")), bound=30)


def test_a_state_dir_restart_after_a_kill_keeps_a_sandboxs_files(alone: Unprivileged) -> None:
    """``serve --state-dir`` killed (SIGKILL) and started again: the sandbox comes back
    paused, resumes and has its files."""
    before = "echo kept > /root/kept && useradd -m dev"
    after = "cat /root/kept; id -u dev; ls -d /home/dev"
    assert restarted(alone, before, after) == (0, "kept\n1000\n/home/dev\n")


#: Builds an empty tree as ``debian.build`` builds the user's (``alone``), with a setup hook
#: that gives a file to ``_apt`` (the filter makes that a success doing nothing) and a
#: later hook that lists what the extract hook bound into ``/dev``.
_BUILD = """
import subprocess, sys
from fake_server.runtime.process.containment import seccomp
from fake_server.runtime.process.images import debian
fd = seccomp.program_fd(ignore_chown=True, confine=False)
hooks = [
    '--setup-hook=mkdir -p "$1/dev" "$1/proc" "$1/etc" && echo x >"$1/etc/f" && '
    'chown 42:42 "$1/etc/f"',
    '--essential-hook=ls "$1/dev" >"$1/devices" && stat -f -c %T "$1/dev/pts" >>"$1/devices"',
]
argv = [*debian.alone(sys.argv[1], fd), '--variant=custom', '--skip=update', '--skip=check/empty',
        *hooks, 'trixie', sys.argv[2], 'http://127.0.0.1:9/debian']
done = subprocess.run(argv, pass_fds=(fd,), capture_output=True, text=True)
said = done.stderr.strip().splitlines()[-1] if done.returncode == 0 else done.stderr
print(done.returncode, said)
"""


@pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="mmdebstrap is not installed")
def test_the_build_runs_as_root_of_the_users_id_alone() -> None:
    uid = free_id(64_500)
    top = Path(tempfile.mkdtemp(prefix="createos-alone-build-"))
    try:
        top.chmod(0o711)
        (top / "holding").mkdir()
        (top / "tree").mkdir()
        os.chown(top / "tree", uid, uid)
        mmdebstrap = str(shutil.which("mmdebstrap"))
        argv = [sys.executable, "-c", _BUILD, mmdebstrap, str(top / "tree")]
        env = {**os.environ, "HOME": str(top / "tree"), "PYTHONPATH": os.getcwd()}
        done = subprocess.run(
            [*as_user(uid, uid, top / "holding"), *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.stdout.startswith("0 I: success in "), done.stdout + done.stderr
        tree = top / "tree"
        # the devices were there for the maintainer scripts, and are gone from the tree
        listed = (tree / "devices").read_text().split()
        assert listed == [
            "fd", "full", "null", "ptmx", "pts", "random", "stderr", "stdin", "stdout", "tty",
            "urandom", "zero", "devpts",
        ]  # fmt: skip
        assert sorted(p.name for p in (tree / "dev").iterdir()) == []
        owners = {(p.lstat().st_uid, p.lstat().st_gid) for p in [tree, *tree.rglob("*")]}
        assert owners == {(uid, uid)}
        assert (tree / "etc/f").read_text() == "x\n"
    finally:
        shutil.rmtree(top)
