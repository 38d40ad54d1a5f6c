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
import socket
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.net.nft import nft_path
from fake_server.runtime.process.net.usernet import pasta_path
from tests._needs import needs, needs_command
from tests.security._unprivileged import Unprivileged, free_id, serve_as, subordinate_user

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(os.geteuid() != 0, reason="running serve as another user needs root"),
]
#: The tests of the subordinate map (and of its fallback where ``newuidmap`` is hidden).
_UIDMAP = needs_command("newuidmap", "uidmap's newuidmap", "apt-get install uidmap")

#: Whether an unprivileged fake's sandboxes have a route out (``usernet``): pasta and nft.
_ROUTED = pasta_path() is not None and nft_path() is not None
#: The tests of that route out.
_PASTA = needs(None if _ROUTED else "passt's pasta and nftables", "apt-get install passt nftables")

#: Subordinate ids the module's named user gets (past every range the host hands out).
_SUB_START = 1_500_000_000
_TAIL = "; /proc masked, a seccomp filter; no disk size per sandbox (the host-directory layout)"


def _own_line(uid: int) -> list[str]:
    """The own-id map as a sandbox reads it: onto the host, or onto the fake's namespace H
    (whose root is the caller) where the sandbox has a route out."""
    return ["1000", "0" if _ROUTED else str(uid), "1"]


@pytest.fixture(name="own", scope="module")
def _own() -> Iterator[Unprivileged]:
    """``serve`` as a uid no ``/etc/passwd`` line names."""
    yield from serve_as(free_id(61_000))


@pytest.fixture(name="named", scope="module")
def _named() -> Iterator[int]:
    """A uid with a name and subordinate ranges for the module (removed after)."""
    uid = free_id(62_000)
    with subordinate_user(uid, uid, _SUB_START):
        yield uid


@pytest.fixture(name="sub", scope="module")
def _sub(named: int) -> Iterator[Unprivileged]:
    """``serve`` as the named uid with subordinate ranges."""
    yield from serve_as(named)


@pytest.fixture(name="helpless", scope="module")
def _helpless(named: int) -> Iterator[Unprivileged]:
    """``serve`` as the named uid with subordinate ranges, where ``newuidmap`` is missing."""
    found = shutil.which("newuidmap")
    assert found is not None
    yield from serve_as(named, hide=(found,))


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
    assert [line.split() for line in out.splitlines()] == [_own_line(helpless.uid)] * 2


def test_the_own_id_map_inside(own: Unprivileged) -> None:
    sandbox = own.target.create()
    code, out = own.target.sh(sandbox, "id; cat /proc/self/uid_map /proc/self/gid_map")
    assert code == 0, out
    rows = [line.split() for line in out.splitlines()]
    assert rows == [
        ["uid=1000(sandbox)", "gid=1000(sandbox)", "groups=1000(sandbox)"],
        _own_line(own.uid),
        _own_line(own.uid),
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
    if _ROUTED:  # inside the fake's namespace H, which maps them so: the same extents of H's
        expected = [["0", "0", "1000"], ["1000", "1000", "1"], ["1001", "1001", "64535"]]
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


@_PASTA
@pytest.mark.parametrize("which", ["own", pytest.param("sub", marks=_UIDMAP)])
def test_a_route_out_the_sandbox_cannot_change(which: str, request: pytest.FixtureRequest) -> None:
    """pasta gives the sandbox ``eth0`` and a default route (it reaches the Debian archive,
    as ``apt`` would); the namespace is the fake's: neither its rules nor its links can be
    changed from inside."""
    target = request.getfixturevalue(which).target
    sandbox = target.create()
    _code, out = target.sh(
        sandbox,
        "ip route | grep -c '^default .* dev eth0'\n"
        "curl -sS -o /dev/null -m 20 -w '%{http_code}\\n' "
        "http://deb.debian.org/debian/dists/stable/Release\n"
        "nft flush ruleset 2>&1 | head -1; ip link set eth0 down; ip -br link show eth0 | "
        "grep -o LOWER_UP",
        timeout=60,
    )
    assert out == (
        "1\n200\nError: Could not process rule: Operation not permitted\n"
        "RTNETLINK answers: Operation not permitted\nLOWER_UP\n"
    ), out


@_PASTA
def test_egress_rules_hold_and_the_host_stays_out_of_reach(own: Unprivileged) -> None:
    """Address rules are enforced (``curl`` to an address they leave out gets no answer, while
    the name still resolves); whatever the rules, no address of the host is reached."""
    target = own.target
    listener = socket.create_server(("0.0.0.0", 0))  # every address of the host
    port = listener.getsockname()[1]
    try:
        sandbox = target.create()
        addresses = sorted(
            {str(entry[4][0]) for entry in socket.getaddrinfo(socket.gethostname(), None,
                                                               socket.AF_INET)}
            - {"127.0.0.1"}
        )  # fmt: skip
        probes = "".join(
            f"bash -c 'echo > /dev/tcp/{address}/{port}' 2>/dev/null; echo {address}=$?\n"
            for address in addresses
        )
        _code, out = target.sh(sandbox, probes)
        assert out == "".join(f"{address}=1\n" for address in addresses), out
        rules = target.api.put(f"/v1/sandboxes/{sandbox}/egress", json={"egress": ["203.0.113.7"]})
        assert rules.status_code == 200, rules.text
        _code, out = target.sh(
            sandbox,
            "getent hosts deb.debian.org >/dev/null; echo resolved=$?\n"
            "curl -sS -o /dev/null -m 5 http://deb.debian.org/ 2>/dev/null; echo curl=$?",
        )
        assert out == "resolved=0\ncurl=28\n", out
    finally:
        listener.close()


@pytest.fixture(name="tunless", scope="module")
def _tunless() -> Iterator[Unprivileged]:
    """``serve`` as a uid without subordinate ids where pasta cannot make its tap (``/dev/null``
    bound over ``/dev/net/tun``)."""
    yield from serve_as(free_id(61_000), hide=("/dev/net/tun",))


@_PASTA
def test_without_a_tap_the_sandbox_has_loopback_only_and_the_line_says_why(
    tunless: Unprivileged,
) -> None:
    runtime = next(line for line in tunless.target.serve.lines if line.startswith("runtime: "))
    assert runtime.startswith(
        "runtime: process (no shared sandbox network: not root; loopback only, since a sandbox "
        "network with pasta cannot be made here (pasta failed: "
    ), runtime
    sandbox = tunless.target.create()
    code, out = tunless.target.sh(sandbox, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert (code, out) == (0, "lo\n")
