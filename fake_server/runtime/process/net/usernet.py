"""An unprivileged fake's sandbox network: a route out through pasta, egress rules it keeps.

An ordinary user cannot make a network namespace in the host's user namespace, so each
sandbox gets two namespaces of the fake's (``UserNet``): a user namespace H, held by a small
process (``unshare``, which leaves when the fake closes its stdin or dies), and a network
namespace N owned by H. passt's ``pasta`` (Debian's ``passt``) gives N an ``eth0`` and a
default route out: it runs on the host as the caller and makes the sandbox's connections
as its own sockets (user-mode networking, as rootless podman has). It forwards no port in
either direction and does not map the gateway to the host's loopback (``--no-map-gw``):
the host's loopback services, the fake's API among them, stay out of reach.

The sandbox's init then makes its own user namespace S inside H (bwrap, in N): S's ids are
H's (``Nested``), so the host ids are those of H's map, the caller's subordinate ids
(``idmap.Subordinate``) or its own id alone (``idmap.OwnId``). A sandbox booting the image
(``userroot``, map ``idmap.Extents``: root inside is the caller) has H hold a mount namespace
too, where its root file system is mounted (H's root may mount there, the caller may not).
Root in H is the fake's: it configures N (nftables' ``egress`` table: the sandbox's egress
rules, and a drop of every other address of the host). No process of the sandbox has a
capability in H (S is its child), so no process of the sandbox, root inside included, can
change N's interfaces, routes or rules.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from typing import TYPE_CHECKING

from fake_server.runtime.process.containment import idmap, programs
from fake_server.runtime.process.net import nft, policy
from fake_server.runtime.process.net.netns import nsenter_path
from fake_server.runtime.process.net.router import GATEWAY

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DEVICE", "UserNet", "pasta_path"]

#: N's interface to the outside (pasta's tap).
DEVICE = "eth0"
_PASTA_OPTIONS = (
    "--config-net", "--no-map-gw", "--ipv4-only", "--quiet", "--foreground",
    "-t", "none", "-u", "none", "-T", "none", "-U", "none", "--dns-forward", GATEWAY,
)  # fmt: skip


@functools.cache
def pasta_path() -> str | None:
    """passt's ``pasta``, or ``None`` when it is not installed."""
    return shutil.which("pasta", path=programs.PATH)


def _host_addresses() -> list[str]:
    """The host's own IPv4 addresses but loopback (``N`` drops traffic to them)."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        for *_rest, address in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.add(str(address[0]))
    with contextlib.suppress(OSError), open("/proc/net/fib_trie", encoding="ascii") as handle:
        lines = handle.read().splitlines()
        for before, line in itertools.pairwise(lines):
            if "/32 host LOCAL" in line:
                found.add(before.split()[-1])
    return sorted(a for a in found if not ipaddress.IPv4Address(a).is_loopback)


class UserNet:
    """One sandbox's namespaces H and N (see the module's docstring); closed with it."""

    def __init__(self, ids: idmap.Subordinate | idmap.OwnId | idmap.Extents) -> None:
        pasta = pasta_path()
        if pasta is None:
            raise FileNotFoundError("passt's pasta is not installed (apt-get install passt)")
        # H holds a mount namespace too for the image's map (``userroot``)
        mount = ["--mount"] if isinstance(ids, idmap.Extents) else []
        spaces = ["--user", "--net", *mount]
        self._holder = subprocess.Popen(
            ["unshare", *spaces, "--", "sh", "-c", "echo; read -r _"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={"PATH": programs.PATH},
        )
        self._pasta: subprocess.Popen[bytes] | None = None
        self._keep: list[str] = []
        try:
            assert self._holder.stdout is not None
            if self._holder.stdout.readline() != b"\n":
                raise OSError("unshare --user --net did not start")
            self.nested = _map_holder(self._holder.pid, ids)
            #: Own id alone: H denies ``setgroups``, and the caller is H's root already.
            self._keep = ["--preserve-credentials"] if self.nested.keep else []
            self.run_inside(["ip", "link", "set", "lo", "up"])
            nft.run(_base(_host_addresses()), enter=self.enter())
            self._start_pasta(pasta)
        except BaseException:
            self.close()
            raise
        self.enforced = False

    @property
    def holder(self) -> int:
        """The pid of H's holder (``/proc/<pid>/root`` is the root of its mount namespace)."""
        return self._holder.pid

    def options(self) -> list[str]:
        """``nsenter``'s options entering H (as its root, who has every capability there)
        and N."""
        pid = self._holder.pid
        return [f"--user=/proc/{pid}/ns/user", f"--net=/proc/{pid}/ns/net", *self._keep]

    def enter(self, *, mount: bool = False) -> list[str]:
        """``nsenter`` into H and N (``mount``: and H's mount namespace)."""
        mounts = [f"--mount=/proc/{self._holder.pid}/ns/mnt"] if mount else []
        return [nsenter_path(), *self.options(), *mounts, "--"]

    def run_inside(self, argv: list[str], *, mount: bool = False) -> None:
        """Run ``argv`` as H's root in N (``mount``: in H's mount namespace too); ``OSError``
        with its last line of error when it fails."""
        programs.run([*self.enter(mount=mount), *argv], what=argv[0])

    def set_rules(self, rules: Sequence[str]) -> None:
        """Enforce ``rules`` on the sandbox's traffic out (``OSError`` when nft refuses)."""
        batch, self.enforced = policy.commands(DEVICE, rules, enforced_before=self.enforced)
        if batch:
            nft.run(batch, enter=self.enter())

    def close(self) -> None:
        """Stop pasta and the holder (N goes with the sandbox's last process); idempotent."""
        pasta, self._pasta = self._pasta, None
        if pasta is not None:
            with contextlib.suppress(ProcessLookupError):
                pasta.kill()
            pasta.wait()
        holder = self._holder
        if holder.stdin is not None and not holder.stdin.closed:
            with contextlib.suppress(OSError):
                holder.stdin.close()
            if holder.stdout is not None:
                holder.stdout.close()
            holder.wait()

    def _start_pasta(self, pasta: str) -> None:
        """pasta in the foreground, killed with the fake (``setpriv --pdeathsig``); ready when
        it writes its pid (after N is configured) into a pipe of the fake's."""
        pid = self._holder.pid
        ready, written = os.pipe()
        log = tempfile.TemporaryFile()  # noqa: SIM115 (read on failure, closed below)
        try:
            argv = [
                "setpriv", "--pdeathsig", "KILL", "--", pasta, *_PASTA_OPTIONS,
                "--pid", f"/proc/self/fd/{written}",
                "--netns", f"/proc/{pid}/ns/net", "--userns", f"/proc/{pid}/ns/user",
            ]  # fmt: skip
            self._pasta = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                pass_fds=(written,),
                env={"PATH": programs.PATH},
            )
            os.close(written)
            written = -1
            with os.fdopen(ready, "rb") as handle:
                ready = -1
                if not handle.readline().strip():
                    self._pasta.wait()
                    log.seek(0)
                    lines = log.read().decode(errors="replace").splitlines()
                    lines = [line for line in lines if "syslog" not in line]
                    raise OSError(f"pasta failed: {(lines or ['?'])[-1][:200]}")
        finally:
            log.close()
            for fd in (ready, written):
                if fd >= 0:
                    os.close(fd)


def _base(host: Sequence[str]) -> list[str]:
    """N's ``egress`` table: loopback and DNS to ``GATEWAY`` (pasta forwards it to the host's
    resolver, as the router's resolver answers there as root) always pass, the host's
    addresses never, then each sandbox's rules (``policy``: ``sandboxes`` names the
    chain of ``DEVICE`` once rules are set)."""
    table = policy.TABLE
    batch = [
        f"add table {table}",
        f"add map {table} sandboxes {{ type ifname : verdict; }}",
        f"add chain {table} out {{ type filter hook output priority 0; policy accept; }}",
        f'add rule {table} out oifname "lo" accept',
    ]
    batch.append(
        f"add rule {table} out ip daddr {GATEWAY} meta l4proto {{ tcp, udp }} th dport 53 accept"
    )
    if host:
        batch.append(f"add rule {table} out ip daddr {{ {', '.join(host)} }} drop")
    batch += [
        f"add rule {table} out meta nfproto ipv6 drop",
        f"add rule {table} out oifname vmap @sandboxes",
    ]
    return batch


def _map_holder(pid: int, ids: idmap.Subordinate | idmap.OwnId | idmap.Extents) -> idmap.Nested:
    """Give H its map and say how S (the sandbox's, H's child) maps onto H's ids."""
    if isinstance(ids, idmap.Extents):  # the image's map: S is H, id for id
        idmap.map_user_namespace(pid, ids)
        lines = tuple(f"{first} {first} {count}" for first, _, count in ids.uid)
        return idmap.Nested(pid, lines, keep=ids.own)
    if isinstance(ids, idmap.Subordinate):
        idmap.map_user_namespace(pid, ids)
        inside, rest = idmap.LAYOUT_ID, idmap.SIZE - idmap.LAYOUT_ID - 1
        lines = (f"0 0 {inside}", f"{inside} {inside} 1", f"{inside + 1} {inside + 1} {rest}")
        return idmap.Nested(pid, lines, keep=False)
    idmap.map_own_id(pid, ids.uid, ids.gid, inside=0)
    return idmap.Nested(pid, (f"{idmap.LAYOUT_ID} 0 1",), keep=True)
