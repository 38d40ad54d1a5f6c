"""Escape, as an unprivileged user runs ``serve``: the sandbox's ids are the caller's at most.

A developer runs ``createos-fake serve`` (or the pytest plugin) as themselves. The fake cannot
mount there, so sandboxes are on the host-directory layout (user ``sandbox``, uid 1000
inside); ``serve`` runs here as a uid of its own through ``setpriv`` (``_unprivileged``) in
two ways: a uid no ``/etc/passwd`` line names (the caller's own id alone is mapped), and one
given a name and subordinate ranges for the module (its ``/etc/passwd``, ``/etc/subuid`` and
``/etc/subgid`` lines, removed after), where ``newuidmap``/``newgidmap`` map the sandbox's
other 65,535 ids, root included, onto those ranges (and, with ``newuidmap`` hidden, where the
caller's own id alone is mapped and the line says why). Each checks from inside: the map, who
owns on the host what the sandbox writes, that a file of the host's root in the sandbox's
own directory stays unwritable, that the kernel's knobs stay out of reach, and that the
start-up line names the map. Before these maps every exec of an unprivileged fake failed
(``nsenter: reassociate to namespace 'ns/ipc' failed``).
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.containment import idmap
from tests._needs import needs_command
from tests.security._attack import Target, serving
from tests.security._unprivileged import as_user, free_id, subordinate_user

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(os.geteuid() != 0, reason="running serve as another user needs root"),
]
#: The tests of the subordinate map (and of its fallback where ``newuidmap`` is hidden).
_UIDMAP = needs_command("newuidmap", "uidmap's newuidmap", "apt-get install uidmap")

#: Subordinate ids the module's named user gets (past every range the host hands out).
_SUB_START = 1_500_000_000
_TAIL = "; /proc masked, a seccomp filter; no disk size per sandbox (the host-directory layout)"


@dataclass(frozen=True, slots=True)
class Unprivileged:
    """A ``serve`` run as ``uid`` (gid the same), its ``$TMPDIR`` at ``temp``."""

    target: Target
    uid: int
    temp: Path

    def containment(self) -> str:
        return next(line for line in self.target.serve.lines if line.startswith("containment: "))

    def sandbox_dir(self, sandbox: str) -> Path:
        """The sandbox's directory on the host."""
        found = list(self.temp.glob(f"createos-fake-process/*/{sandbox}"))
        assert len(found) == 1, found
        return found[0]


def _serve_as(uid: int, hide: Sequence[str] = ()) -> Iterator[Unprivileged]:
    """``serve`` as ``uid``, its ``$HOME`` and ``$TMPDIR`` in a directory of the system's
    temporary directory it can reach (pytest's own is root's alone), removed after; the
    programs ``hide`` names missing."""
    tmp = Path(tempfile.mkdtemp(prefix="createos-unprivileged-"))
    try:
        home, temp, holding = tmp / "home", tmp / "tmp", tmp / "holding"
        for path in (home, temp, holding):
            path.mkdir()
        for path in (home, temp):
            os.chown(path, uid, uid)
        tmp.chmod(0o711)
        temp.chmod(0o711)
        env = {**os.environ, "HOME": str(home), "TMPDIR": str(temp), "PYTHONPATH": os.getcwd()}
        prefix = as_user(uid, uid, holding, hide)
        with serving("--transitions", "immediate", prefix=prefix, env=env) as target:
            yield Unprivileged(target, uid, temp)
    finally:
        shutil.rmtree(tmp)


@pytest.fixture(name="own", scope="module")
def _own() -> Iterator[Unprivileged]:
    """``serve`` as a uid no ``/etc/passwd`` line names."""
    yield from _serve_as(free_id(61_000))


@pytest.fixture(name="named", scope="module")
def _named() -> Iterator[int]:
    """A uid with a name and subordinate ranges for the module (removed after)."""
    uid = free_id(62_000)
    with subordinate_user(uid, uid, _SUB_START):
        yield uid


@pytest.fixture(name="sub", scope="module")
def _sub(named: int) -> Iterator[Unprivileged]:
    """``serve`` as the named uid with subordinate ranges."""
    yield from _serve_as(named)


@pytest.fixture(name="helpless", scope="module")
def _helpless(named: int) -> Iterator[Unprivileged]:
    """``serve`` as the named uid with subordinate ranges, where ``newuidmap`` is missing."""
    found = shutil.which("newuidmap")
    assert found is not None
    yield from _serve_as(named, hide=(found,))


def test_the_own_id_map_is_named_at_start_up(own: Unprivileged) -> None:
    uid = own.uid
    assert own.containment() == (
        f"containment: user sandbox (uid 1000) is your own id {uid} on the host and the only "
        f"id mapped (no subordinate ids: uid {uid} has no /etc/passwd entry, which newuidmap "
        f"needs){_TAIL}"
    )


@_UIDMAP
def test_the_subordinate_map_is_named_at_start_up(sub: Unprivileged) -> None:
    last = _SUB_START + idmap.SIZE - 2
    assert sub.containment() == (
        f"containment: user sandbox (uid 1000) is your own id {sub.uid} on the host, the "
        f"sandbox's other ids (root included) your subordinate ids {_SUB_START}-{last} "
        f"(/etc/subuid and /etc/subgid through newuidmap){_TAIL}"
    )


@_UIDMAP
def test_without_newuidmap_the_callers_own_id_is_mapped_and_named(
    helpless: Unprivileged,
) -> None:
    """Subordinate ranges, but no ``newuidmap``: the caller's own id alone, and why."""
    assert helpless.containment() == (
        f"containment: user sandbox (uid 1000) is your own id {helpless.uid} on the host and "
        "the only id mapped (no subordinate ids: newuidmap is missing (Debian's uidmap "
        f"package)){_TAIL}"
    )
    sandbox = helpless.target.create()
    code, out = helpless.target.sh(sandbox, "cat /proc/self/uid_map /proc/self/gid_map")
    assert code == 0, out
    assert [line.split() for line in out.splitlines()] == [["1000", str(helpless.uid), "1"]] * 2


def test_the_own_id_map_inside(own: Unprivileged) -> None:
    sandbox = own.target.create()
    code, out = own.target.sh(sandbox, "id; cat /proc/self/uid_map /proc/self/gid_map")
    assert code == 0, out
    rows = [line.split() for line in out.splitlines()]
    assert rows == [
        ["uid=1000(sandbox)", "gid=1000(sandbox)", "groups=1000(sandbox)"],
        ["1000", str(own.uid), "1"],
        ["1000", str(own.uid), "1"],
    ]


@_UIDMAP
def test_the_subordinate_map_inside(sub: Unprivileged) -> None:
    sandbox = sub.target.create()
    code, out = sub.target.sh(sandbox, "id; cat /proc/self/uid_map /proc/self/gid_map")
    assert code == 0, out
    rows = [line.split() for line in out.splitlines()]
    expected = [
        ["0", str(_SUB_START), "1000"],
        ["1000", str(sub.uid), "1"],
        ["1001", str(_SUB_START + 1000), "64535"],
    ]
    assert rows == [
        ["uid=1000(sandbox)", "gid=1000(sandbox)", "groups=1000(sandbox)"],
        *expected,
        *expected,
    ]


@pytest.mark.parametrize("which", ["own", pytest.param("sub", marks=_UIDMAP)])
def test_the_sandbox_owns_only_its_callers_files(
    which: str, request: pytest.FixtureRequest
) -> None:
    """What the sandbox writes belongs to the caller on the host, never to root; a file of
    the host's root put in the sandbox's own home stays unwritable; files of the host's root
    show as nobody (unmapped) inside."""
    served: Unprivileged = request.getfixturevalue(which)
    target = served.target
    sandbox = target.create()
    code, out = target.sh(sandbox, "echo made > ~/made && echo ok")
    assert (code, out) == (0, "ok\n")
    home = served.sandbox_dir(sandbox) / "home" / "sandbox"
    made = home / "made"
    assert (made.stat().st_uid, made.stat().st_gid) == (served.uid, served.uid)
    planted = home / "roots"
    planted.write_text("the host's root's\n")
    planted.chmod(0o644)
    assert (planted.stat().st_uid, planted.stat().st_gid) == (0, 0)
    code, out = target.sh(
        sandbox,
        "stat -c '%u %g' ~/roots /usr/bin/env\necho x >> ~/roots; chown 1000 ~/roots; cat ~/roots",
    )
    assert out == (
        "65534 65534\n65534 65534\n"
        "bash: line 3: /home/sandbox/roots: Permission denied\n"
        "chown: changing ownership of '/home/sandbox/roots': Operation not permitted\n"
        "the host's root's\n"
    ), out
    assert planted.read_text() == "the host's root's\n"


@pytest.mark.parametrize("which", ["own", pytest.param("sub", marks=_UIDMAP)])
def test_the_kernels_knobs_stay_out_of_reach(which: str, request: pytest.FixtureRequest) -> None:
    """A host-wide sysctl and ``/proc/sysrq-trigger`` cannot be written (the latter is not
    even there in a ``/proc`` a user namespace mounts, on the kernels tried); ``/proc``'s
    masked paths are empty."""
    target = request.getfixturevalue(which).target
    sandbox = target.create()
    _code, out = target.sh(
        sandbox,
        "echo 1 > /proc/sys/kernel/core_uses_pid\n"
        "echo h 2>/dev/null > /proc/sysrq-trigger; echo sysrq=$?\n"
        "ls -A /proc/acpi /proc/scsi 2>/dev/null | grep -v : | grep . ; echo listed=$?",
    )
    assert out == (
        "bash: line 2: /proc/sys/kernel/core_uses_pid: Read-only file system\nsysrq=1\nlisted=1\n"
    ), out


@pytest.mark.parametrize("which", ["own", pytest.param("sub", marks=_UIDMAP)])
def test_the_seccomp_filter_holds_in_every_process(
    which: str, request: pytest.FixtureRequest
) -> None:
    """A nested user namespace (where most kernel exploits start) and a key in a kernel
    keyring, both allowed to any unprivileged user, answer ``EPERM`` in an exec; the
    sandbox's init (pid 1, the parent of what an exec leaves behind) runs under the filter
    too."""
    target = request.getfixturevalue(which).target
    sandbox = target.create()
    _code, out = target.sh(
        sandbox,
        "unshare -U true; echo unshare=$?\n"
        "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); "
        'print("add_key", l.syscall(248, b"user", b"k", b"v", 1, -2), ctypes.get_errno())\'\n'
        "grep ^Seccomp: /proc/1/status /proc/self/status",
    )
    assert out == (
        "unshare: unshare failed: Operation not permitted\nunshare=1\n"
        f"add_key -1 {errno.EPERM}\n"
        "/proc/1/status:Seccomp:\t2\n/proc/self/status:Seccomp:\t2\n"
    ), out
