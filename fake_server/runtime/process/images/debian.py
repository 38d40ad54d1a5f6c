"""devbox:1 as Debian 13 (trixie): a root file system built once per machine, in the cache.

The service's devbox:1 is Ubuntu 24.04 (noble); only Debian's archive is reachable from the
machines this project runs on, and Debian 13 is the closest to noble there: the 64-bit
``time_t`` package names (``libssl3t64``…), Python 3.13, Node.js 20, GCC 14. The tree is built
with ``mmdebstrap`` (``debootstrap`` where only it is installed) from the same mirror the
host's apt uses (``deb.debian.org`` otherwise; ``$CREATEOS_FAKE_DEBIAN_MIRROR`` overrides
it), with the developer tools the official examples run (``PACKAGES``). It takes minutes and
about 900 MB, so only ``createos-fake image`` builds it (CI runs that before the tests);
``serve`` and the fixtures use it where it is built and the host's own programs otherwise,
and say which (``system``).

Run by a user with subordinate ids (``idmap.Subordinate``), ``createos-fake image`` builds a
tree of that user's own (``user_tree``): ``mmdebstrap --mode=unshare`` leaves id ``n`` owned
by subordinate id ``subuid + n``, then root's files are given to the user (``_REOWN``, as
root of a user namespace mapping both, ``subids``), which is root in the sandboxes an
unprivileged fake boots on it (``userroot``). A marker names the ids it was made for.

Run by a user without them (``idmap.OwnId``), it builds the user's tree with every file the
user's: ``mmdebstrap --mode=root`` as root of a user namespace mapping the user alone, under
a seccomp filter answering ``chown`` with success (``seccomp``, ``ignore_chown``), with
``/dev``'s devices bound in by hooks (a namespace of one id may neither make device nodes nor
mount a ``devpts`` owned by an id it lacks, as mmdebstrap's own is). apt there, and in the
sandboxes booting the tree, downloads as root (``OWN_APT``): it cannot drop to ``_apt``, an
unmapped id. The image cache holding a user's tree is the user's alone (``private``): its
set-user-ID programs belong to the user on the host.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.process.containment import idmap, seccomp, subids
from fake_server.runtime.process.containment.bwrap import bwrap_path

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "NAME", "OWN_APT", "PACKAGES", "SUITE", "alone", "build", "built", "built_for", "made_for",
    "private", "tree", "user_tree",
]  # fmt: skip

SUITE = "trixie"
NAME = "Debian 13 (trixie)"
#: What the official examples and tutorials run inside devbox:1, beside Debian's required set.
PACKAGES = (
    "apt-utils", "ca-certificates", "curl", "wget", "git", "openssh-client", "procps", "mount",
    "iproute2", "iputils-ping", "less", "nano", "vim-tiny", "unzip", "zip", "xz-utils",
    "bzip2", "file", "jq", "sudo", "tzdata", "locales", "build-essential", "pkg-config",
    "python3", "python3-pip", "python3-venv", "python3-dev", "nodejs", "npm",
)  # fmt: skip
_DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: A Debian mirror in apt's sources (deb822 ``URIs:`` or a one-line ``deb`` entry).
_SOURCE = re.compile(r"(?:URIs:\s*|^deb\s+(?:\[[^]]*\]\s*)?)(https?://\S+/debian)/?\s", re.M)
_MARKER = ".createos-devbox"
_TIMEOUT = 1800
#: apt's configuration in a tree of one id (path in the tree, text): apt downloads as root.
OWN_APT = (
    "etc/apt/apt.conf.d/00createos-own-id",
    '// root is the only id here: apt cannot drop to _apt\nAPT::Sandbox::User "root";\n',
)
#: Devices the maintainer scripts of a tree of one id find in ``/dev``, bound from the host's.
_DEVICES = "null zero full random urandom tty"
_OWN_OPTIONS = (
    "--skip=chroot/mount/dev",
    "--skip=chroot/mount/sys",
    '--aptopt=APT::Sandbox::User "root"',
    f'--extract-hook=for f in {_DEVICES}; do touch "$1/dev/$f" && '
    'mount --bind "/dev/$f" "$1/dev/$f" || exit 1; done; mkdir -p "$1/dev/pts" && '
    'mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 none "$1/dev/pts" && '
    'ln -sf pts/ptmx "$1/dev/ptmx"',
    f'--customize-hook=for f in {_DEVICES}; do umount "$1/dev/$f" && rm "$1/dev/$f" || '
    'exit 1; done; umount "$1/dev/pts" && rmdir "$1/dev/pts" && rm "$1/dev/ptmx"',
)


def tree(cache: Path) -> Path:
    """Where the tree is (or will be) in the image cache ``cache``."""
    return cache / f"devbox-debian13-{SUITE}"


def built(cache: Path) -> Path | None:
    """The tree, if a build finished (a half-made one is not taken)."""
    path = tree(cache)
    return path if (path / _MARKER).exists() else None


def user_tree(cache: Path) -> Path:
    """Where an unprivileged user's tree is (or will be) in the image cache ``cache``."""
    return cache / f"devbox-debian13-{SUITE}-user"


def made_for(ids: idmap.Subordinate | idmap.OwnId) -> str:
    """The marker of a user's tree: the ids its owners are."""
    if isinstance(ids, idmap.OwnId):
        return f"{SUITE} uid {ids.uid} gid {ids.gid} alone\n"
    return f"{SUITE} uid {ids.uid} gid {ids.gid} subuid {ids.subuid} subgid {ids.subgid}\n"


def private(cache: Path) -> None:
    """Make the image cache ``cache`` the user's alone (a user's tree holds set-user-ID
    programs of the user's; root's cache, in root's home, is root's already)."""
    with contextlib.suppress(OSError):
        found = cache.stat()
        if found.st_uid == os.getuid() and found.st_mode & 0o077:
            cache.chmod(0o700)


def built_for(cache: Path, ids: idmap.Subordinate | idmap.OwnId) -> Path | None:
    """The user's tree, if a build for ``ids`` finished (``None`` too when made for others)."""
    path = user_tree(cache)
    try:
        return path if (path / _MARKER).read_text() == made_for(ids) else None
    except OSError:
        return None


def mirror() -> str:
    """The Debian mirror: ``$CREATEOS_FAKE_DEBIAN_MIRROR``, the host's apt's, or Debian's."""
    chosen = os.environ.get("CREATEOS_FAKE_DEBIAN_MIRROR")
    if chosen:
        return chosen
    for source in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        try:
            text = Path(source).read_text()
        except OSError:
            continue
        found = re.search(
            r"(?:URIs:\s*|^deb\s+(?:\[[^]]*\]\s*)?)(https?://\S+/debian)/?\s", text, re.M
        )
        if found:
            return found.group(1)
    return _DEFAULT_MIRROR


def _builder(ids: idmap.Subordinate | idmap.OwnId | None, filter_fd: int) -> list[str] | None:
    """The command line that builds a tree into the path appended to it, or ``None``: as
    root, or as a user (``ids``, which only mmdebstrap can) with subordinate ids or alone
    (the module's docstring; ``filter_fd``: the ``chown`` filter bwrap reads)."""
    packages = ",".join(PACKAGES)
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is not None:
        options = ["--quiet", "--variant=apt", f"--include={packages}", SUITE]
        if isinstance(ids, idmap.OwnId):
            return [*alone(mmdebstrap, filter_fd), *options]
        mode = ["--mode=unshare"] if ids is not None else []
        return [mmdebstrap, *mode, *options]
    if ids is not None:
        return None
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin")
    if debootstrap is not None:
        return [debootstrap, "--variant=minbase", f"--include={packages}", SUITE]
    return None


def alone(mmdebstrap: str, filter_fd: int) -> list[str]:
    """``mmdebstrap --mode=root`` with the options a tree of the caller's id alone needs, run
    by bwrap as root of a user namespace mapping that id alone, with every capability there,
    its own pids, and the ``chown`` filter read from ``filter_fd``."""
    return [
        bwrap_path(), "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL",
        "--unshare-pid", "--die-with-parent", "--bind", "/", "/", "--dev", "/dev",
        "--proc", "/proc", "--seccomp", str(filter_fd), "--", mmdebstrap, "--mode=root",
        *_OWN_OPTIONS,
    ]  # fmt: skip


def build(
    cache: Path,
    progress: Callable[[str], None] | None = None,
    ids: idmap.Subordinate | idmap.OwnId | None = None,
) -> Path:
    """The tree, built now if it is not (``RuntimeUnavailable`` saying what to do when it
    cannot be: not root, no builder, the mirror unreachable); with ``ids``, the unprivileged
    user's own (``user_tree``)."""
    done = built(cache) if ids is None else built_for(cache, ids)
    if done is not None:
        return done
    if ids is None and os.geteuid() != 0:
        raise RuntimeUnavailable(_failed("it needs root", cache))
    if ids is not None:
        cache.mkdir(parents=True, exist_ok=True)
        private(cache)
    own = isinstance(ids, idmap.OwnId)
    if own and shutil.which("mmdebstrap") is not None and seccomp.available() is not None:
        raise RuntimeUnavailable(_failed(str(seccomp.available()), cache))
    filter_fd = seccomp.program_fd(ignore_chown=True, confine=False) if own else -1
    try:
        return _build(cache, progress, ids, filter_fd)
    finally:
        if filter_fd >= 0:
            os.close(filter_fd)


def _build(
    cache: Path,
    progress: Callable[[str], None] | None,
    ids: idmap.Subordinate | idmap.OwnId | None,
    filter_fd: int,
) -> Path:
    """``build`` once its ``chown`` filter is open (``filter_fd``, -1 for none)."""
    command = _builder(ids, filter_fd)
    if command is None:
        missing = "mmdebstrap is" if ids is not None else "neither mmdebstrap nor debootstrap is"
        raise RuntimeUnavailable(
            _failed(f"{missing} installed (apt-get install mmdebstrap)", cache)
        )
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another fake may be building it right now
        done = built(cache) if ids is None else built_for(cache, ids)
        if done is not None:
            return done
        target = tree(cache) if ids is None else user_tree(cache)
        staging = Path(tempfile.mkdtemp(prefix=".debian-", dir=cache))
        try:
            _bootstrap(command, staging, cache, progress, filter_fd)
            if isinstance(ids, idmap.Subordinate):
                _reown(staging, ids)
            elif ids is not None:
                conf = staging / OWN_APT[0]
                conf.parent.mkdir(parents=True, exist_ok=True)
                conf.write_text(OWN_APT[1])
            (staging / _MARKER).write_text(f"{SUITE}\n" if ids is None else made_for(ids))
            if target.exists():  # half made, or a user's made for ids it no longer has
                _discard(target, ids, progress)
            os.rename(staging, target)
        except BaseException:
            with contextlib.suppress(OSError):
                _remove(staging, ids)
            raise
    return target


def _bootstrap(
    command: list[str],
    staging: Path,
    cache: Path,
    progress: Callable[[str], None] | None,
    filter_fd: int = -1,
) -> None:
    """Run the builder into ``staging`` (``RuntimeUnavailable`` saying why it failed)."""
    source = mirror()
    if progress is not None:
        progress(
            f"createos-fake: building image devbox:1 once: {NAME} from {source} into "
            f"{cache} (a few minutes)"
        )
    try:
        result = subprocess.run(
            [*command, str(staging), source],
            capture_output=True,
            timeout=_TIMEOUT,
            check=False,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8"},
            pass_fds=(filter_fd,) if filter_fd >= 0 else (),
        )
    except subprocess.TimeoutExpired:
        raise RuntimeUnavailable(_failed(f"it did not finish in {_TIMEOUT} s", cache)) from None
    if result.returncode != 0 or not (staging / "usr/bin/python3").exists():
        lines = result.stderr.decode(errors="replace").strip().splitlines()
        named = (Path(a).name for a in command if a.endswith(("mmdebstrap", "debootstrap")))
        name = next(named, Path(command[0]).name)  # the builder, not the bwrap running it
        why = f"{name} failed (status {result.returncode})"
        raise RuntimeUnavailable(_failed(f"{why}: {lines[-1][:200] if lines else ''}", cache))


#: Gives what id 1 owns to id 0 (run where 1 is the tree's root, 0 the user), restoring the
#: set-user-ID and set-group-ID bits ``chown`` clears; a hard link's inode is done at its first
#: name (its second shows id 0 already), a symbolic link itself, never its target.
_REOWN = """
import os, stat, sys
def fix(path):
    found = os.lstat(path)
    uid = 0 if found.st_uid == 1 else -1
    gid = 0 if found.st_gid == 1 else -1
    if uid == gid == -1:
        return
    os.lchown(path, uid, gid)
    if not stat.S_ISLNK(found.st_mode) and found.st_mode & 0o6000:
        os.chmod(path, stat.S_IMODE(found.st_mode))
top = sys.argv[1]
fix(top)
for where, dirs, files in os.walk(top):
    for name in dirs + files:
        fix(os.path.join(where, name))
"""


def _reown(top: Path, ids: idmap.Subordinate) -> None:
    """Give the files of the tree's root (subordinate id ``subuid``) to the user."""
    both = idmap.Extents.root_as_caller(ids, offset=0, count=idmap.SIZE)
    try:
        subids.run_mapped(both, [sys.executable, "-c", _REOWN, str(top)])
    except OSError as exc:
        raise RuntimeUnavailable(_failed(f"its owners cannot be set ({exc})", top.parent)) from None


def _discard(
    path: Path,
    ids: idmap.Subordinate | idmap.OwnId | None,
    progress: Callable[[str], None] | None,
) -> None:
    """Move an old tree out of the new one's way and remove it; one whose owners are ids the
    user no longer maps stays where it was moved, and ``progress`` says where."""
    stale = path.with_name(f".debian-stale-{secrets.token_hex(4)}")
    os.rename(path, stale)
    try:
        _remove(stale, ids)
    except OSError:
        if progress is not None:
            progress(
                f"createos-fake: the old tree, made for other ids, is left at {stale} (remove it "
                "as root)"
            )


def _remove(path: Path, ids: idmap.Subordinate | idmap.OwnId | None) -> None:
    """Remove a tree (a user's with subordinate ids as root of a namespace with its ids: they
    own the files)."""
    if not path.exists():
        return
    if ids is None:
        shutil.rmtree(path, ignore_errors=True)
    elif isinstance(ids, idmap.OwnId):
        shutil.rmtree(path)  # ``OSError`` when other ids own files there (``_discard``)
    else:
        subids.remove(idmap.Extents.root_as_caller(ids, offset=0, count=idmap.SIZE), str(path))


def _failed(why: str, cache: Path) -> str:
    return (
        f"the {NAME} image for devbox:1 cannot be built: {why}. Sandboxes boot the host's own "
        f"programs until it is (createos-fake image builds it into {cache})"
    )
