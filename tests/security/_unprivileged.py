"""``serve`` run by an unprivileged user, as a developer runs it: what the suite needs for that.

``as_user`` is the command prefix: ``setpriv`` drops to a uid and gid with no supplementary
groups and no inheritable capabilities, in a mount namespace of its own (``unshare``) where
the directories this interpreter and this checkout live in are reachable by that uid (a
tmpfs over an ancestor that is not, such as a root-only ``/root``, with the needed
directories bound back in). Nothing else of the host changes.

``subordinate_user`` gives a uid a name and subordinate ranges for the length of a test: its
own lines in ``/etc/passwd``, ``/etc/subuid`` and ``/etc/subgid``, added under the lock the
shadow tools take (``/etc/.pwd.lock``, held until they are gone, so a concurrent
``useradd`` waits) and removed by writing each file's original bytes back. ``newuidmap``
reads those files only (no option points it elsewhere) and needs the caller to have a name
in ``/etc/passwd``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shlex
import shutil
import site
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tests.security._attack import Target, serving

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

__all__ = [
    "FILES", "IMAGE_LINE_END", "Unprivileged", "as_user", "free_id", "restarted", "serve_as",
    "subordinate_user",
]  # fmt: skip

#: How the ``images:`` line of a ``serve`` booting a user's devbox:1 tree ends.
IMAGE_LINE_END = (
    "boot devbox:1: Debian 13 (trixie) on a copy-on-write root per sandbox (user root, you on "
    "the host; apt-get, pip, npm -g; bun)"
)

#: The files ``subordinate_user`` changes (and restores).
FILES = (Path("/etc/passwd"), Path("/etc/subuid"), Path("/etc/subgid"))
_LOCK = "/etc/.pwd.lock"


def free_id(start: int) -> int:
    """The first id from ``start`` on that no user or group has."""
    groups = {
        int(fields[2])
        for line in Path("/etc/group").read_text().splitlines()
        if len(fields := line.split(":")) > 2 and fields[2].isdigit()
    }
    candidate = start
    while True:
        try:
            pwd.getpwuid(candidate)
        except KeyError:
            if candidate not in groups:
                return candidate
        candidate += 1


def _needed() -> list[Path]:
    """The directories ``python -m fake_server`` reads from."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path.cwd().resolve()}
    paths.update(Path(p).resolve() for p in site.getsitepackages())
    return sorted(p for p in paths if p.exists())


def _blocking(path: Path) -> Path | None:
    """The topmost ancestor of ``path`` others may not pass through, if any."""
    for parent in reversed(path.parents):
        if not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def as_user(uid: int, gid: int, holding: Path, hide: Sequence[str] = ()) -> list[str]:
    """The command prefix running a command as ``uid``/``gid`` (see the module's docstring);
    ``holding``: an empty directory of the caller's for the bind mounts' sources; ``hide``:
    programs that command finds missing (``/dev/null``, not executable, bound over them)."""
    script = ["set -e", *(f"mount --bind /dev/null {shlex.quote(path)}" for path in hide)]
    blocked: dict[Path, list[Path]] = {}
    for path in _needed():
        top = _blocking(path)
        if top is not None:
            blocked.setdefault(top, []).append(path)
    for number, (top, paths) in enumerate(blocked.items()):
        held = [holding / f"{number}-{index}" for index in range(len(paths))]
        for path, hold in zip(paths, held, strict=True):
            script += [f"mkdir {shlex.quote(str(hold))}", f"mount --bind {path} {hold}"]
        script.append(f"mount -t tmpfs -o mode=0755 none {shlex.quote(str(top))}")
        for path, hold in zip(paths, held, strict=True):
            script += [f"mkdir -p {shlex.quote(str(path))}", f"mount --move {hold} {path}"]
    setpriv = (
        f"setpriv --reuid={uid} --regid={gid} --clear-groups --inh-caps=-all" if uid else "setpriv"
    )
    script.append(f'exec {setpriv} -- "$@"')
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "\n".join(script),
            "sh"]  # fmt: skip


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    with open(_LOCK, "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(lock, fcntl.LOCK_UN)


def _rewrite(path: Path, data: bytes) -> None:
    """Put ``data`` in ``path`` in place (its inode, owner and mode stay)."""
    with open(path, "r+b") as handle:
        handle.write(data)
        handle.truncate()


@contextlib.contextmanager
def subordinate_user(uid: int, gid: int, start: int) -> Iterator[str]:
    """A name for ``uid`` and the subordinate ids ``start``-``start+65535`` for it (both
    kinds), for the block's length; every file is back byte for byte afterwards."""
    name = f"createos-subid-{os.getpid()}"
    lines = {
        FILES[0]: f"{name}:x:{uid}:{gid}::/nonexistent:/usr/sbin/nologin\n",
        FILES[1]: f"{name}:{start}:65536\n",
        FILES[2]: f"{name}:{start}:65536\n",
    }
    with _locked():  # held throughout: no other change to these files can be lost
        saved = {path: path.read_bytes() for path in FILES}
        try:
            for path, line in lines.items():
                text = saved[path]
                ending = b"" if not text or text.endswith(b"\n") else b"\n"
                _rewrite(path, text + ending + line.encode())
            yield name
        finally:
            for path, data in saved.items():
                _rewrite(path, data)


@dataclass(frozen=True, slots=True)
class Unprivileged:
    """A ``serve`` run as ``uid`` (gid the same), its ``$TMPDIR`` at ``temp``, its ``$HOME``
    at ``home``."""

    target: Target
    uid: int
    temp: Path
    home: Path

    def containment(self) -> str:
        return self.line("containment: ")

    def line(self, start: str) -> str:
        """``serve``'s start-up line beginning with ``start``."""
        return next(line for line in self.target.serve.lines if line.startswith(start))

    def sandbox_dir(self, sandbox: str) -> Path:
        """The sandbox's directory on the host."""
        found = list(self.temp.glob(f"createos-fake-process/*/{sandbox}"))
        assert len(found) == 1, found
        return found[0]


def serve_as(
    uid: int,
    hide: Sequence[str] = (),
    prepare: Callable[[Path], object] | None = None,
    *,
    home: Path | None = None,
    temp: Path | None = None,
    flags: Sequence[str] = (),
) -> Iterator[Unprivileged]:
    """``serve FLAGS`` as ``uid``, its ``$HOME`` (``home``, else a new one) and ``$TMPDIR``
    (``temp``, else a new one) in a directory of the system's temporary directory it can
    reach (pytest's own is root's alone), removed after; the programs ``hide`` names
    missing; ``prepare(home)`` runs first (as root)."""
    tmp = Path(tempfile.mkdtemp(prefix="createos-unprivileged-"))
    try:
        holding = tmp / "holding"
        holding.mkdir()
        if home is None:
            home = tmp / "home"
            home.mkdir()
            os.chown(home, uid, uid)
        if temp is None:
            temp = tmp / "tmp"
            temp.mkdir()
            os.chown(temp, uid, uid)
        if prepare is not None:
            prepare(home)
        tmp.chmod(0o711)
        temp.chmod(0o711)
        env = {**os.environ, "HOME": str(home), "TMPDIR": str(temp), "PYTHONPATH": os.getcwd()}
        prefix = as_user(uid, uid, holding, hide)
        with serving("--transitions", "immediate", *flags, prefix=prefix, env=env) as target:
            yield Unprivileged(target, uid, temp, home)
    finally:
        shutil.rmtree(tmp)


def restarted(served: Unprivileged, before: str, after: str) -> tuple[int, str]:
    """``serve --state-dir`` as ``served``'s user: a sandbox runs ``before``, the fake is
    killed (SIGKILL) and started again, the sandbox (back paused) resumes and runs ``after``;
    its exit code and output."""
    state = served.home / "state"
    serve = contextlib.contextmanager(serve_as)
    flags = ("--state-dir", str(state))
    with serve(served.uid, home=served.home, flags=flags) as first:
        sandbox = first.target.create()
        code, out = first.target.sh(sandbox, before)
        assert code == 0, out
    with serve(served.uid, home=served.home, flags=flags) as again:
        target = again.target
        got = target.api.get(f"/v1/sandboxes/{sandbox}")
        assert got.json()["data"]["status"] == "paused", got.text
        resumed = target.api.post(f"/v1/sandboxes/{sandbox}/resume")
        assert resumed.status_code in (200, 202), resumed.text
        target.sandboxes.append(sandbox)
        return target.sh(sandbox, after)
