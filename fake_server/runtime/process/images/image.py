"""The ``devbox:1`` image: the host's own programs, with everything personal masked.

The image is the host's root file system as the read-only bottom layer of every sandbox's
overlay, under a small mask layer the fake writes once per runtime into a memory file system
(``mask()``). The mask keeps what a developer VM needs (``/usr``, ``/etc``, ``/var/lib``'s
package databases, the ``/bin``… links) and hides the rest behind overlayfs's own markers:
an *opaque* directory shows none of the host's entries below it (``/root``, ``/home``,
``/tmp``, ``/srv``, ``/opt``, ``/mnt``, ``/usr/local``, ``/var/log``…), a *whiteout* hides a
host entry altogether (every other top-level entry such as ``/work``, the host services' data
under ``/var/lib``, ``/etc/shadow``, SSH host keys, Debian's ``EXTERNALLY-MANAGED`` marker, so
``pip install`` works system-wide as on the service). ``/etc/passwd`` and ``/etc/group``
keep only system accounts.

bun is not a Debian package: ``ensure_bun()`` installs it once from the npm registry into the
user's cache (``npm install --global bun``) and sandboxes see it read-only at
``/opt/createos/bun`` (``bun`` and ``bunx`` on ``PATH`` through ``/usr/local/bin``).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.process.net.router import GATEWAY

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "BUN_GUEST", "DEVBOX", "Image", "cache_dir", "ensure_bun", "npm_path", "write_mask",
]  # fmt: skip

DEVBOX = "devbox:1"
#: Where sandboxes see the cached bun install (read-only).
BUN_GUEST = "/opt/createos/bun"
#: The npm package spec ``ensure_bun`` installs.
BUN_PACKAGE = "bun@1"

#: Host top-level entries the image shows; every other one is hidden.
_KEEP_TOP = frozenset({"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "var"})
#: Empty directories of the image (opaque over whatever the host has there) and their modes.
_EMPTY = (
    ("root", 0o700), ("home", 0o755), ("tmp", 0o1777), ("srv", 0o755), ("opt", 0o755),
    ("mnt", 0o755), ("media", 0o755), ("boot", 0o755), ("run", 0o755), ("run/lock", 0o1777),
    ("proc", 0o555), ("sys", 0o555), ("dev", 0o755), ("paperclip-workspace", 0o755),
    ("usr/local", 0o755), ("var/log", 0o755), ("var/tmp", 0o1777), ("var/mail", 0o2775),
    ("var/spool", 0o755), ("var/backups", 0o755), ("var/opt", 0o755), ("var/local", 0o2775),
    ("var/cache/private", 0o700), ("etc/ssl/private", 0o700),
)  # fmt: skip
#: Directories made inside the opaque ones (not opaque themselves).
_SKELETON = (
    "usr/local/bin", "usr/local/sbin", "usr/local/lib", "usr/local/include", "usr/local/share",
    "usr/local/src", "usr/local/etc", "usr/local/games", "var/log/apt", "opt/createos/bun",
)  # fmt: skip
#: Host data stores under /var/lib that belong to the host's services, not to the image.
_VAR_LIB_HIDDEN = (
    "private", "postgresql", "mysql", "docker", "containerd", "containers", "sudo", "systemd",
    "PackageKit", "polkit-1", "NetworkManager", "dhcp", "AccountsService", "redis", "mongodb",
    "git", "snapd", "lxd", "tailscale", "kubelet", "cloud", "libvirt",
)  # fmt: skip
#: Host files hidden (credentials, keys, machine identity); globs under the host root.
_HIDDEN_FILES = (
    "etc/shadow", "etc/shadow-", "etc/gshadow", "etc/gshadow-", "etc/ssh/ssh_host_*",
    "etc/security/opasswd", "etc/machine-id", "etc/credstore", "etc/credstore.encrypted",
)  # fmt: skip
_ETC = {
    "hostname": "sandbox\n",
    "hosts": "127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n::1\tlocalhost ip6-localhost\n",
    #: The router's resolver, relayed to the host's (``network``).
    "resolv.conf": f"nameserver {GATEWAY}\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
    "networks: files\nprotocols: files\nservices: files\nethers: files\nrpc: files\n",
}
_FIRST_USER_ID = 1000
_NOBODY = 65534


@dataclass(frozen=True, slots=True)
class Image:
    """What a sandbox's overlay is made of: the ``lowerdir`` option and read-only binds."""

    name: str
    lowerdir: str
    #: (host path, path in the sandbox) bound read-only over the merged root.
    binds: tuple[tuple[str, str], ...]


def cache_dir() -> Path:
    """Where built image parts are kept between runs (``$XDG_CACHE_HOME/createos-fake``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "createos-fake" / "images"


def _opaque(path: Path, mode: int, marks: str = "trusted") -> None:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()  # a whiteout of the host's entry: an empty directory instead
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(mode)
    os.setxattr(path, f"{marks}.overlay.opaque", b"y")


def _whiteout(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    os.mknod(path, 0o600 | 0o020000, os.makedev(0, 0))


def _system_accounts(text: str) -> str:
    """Lines of a passwd or group file for system accounts (ids below 1000, and nobody)."""
    kept = []
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) > 2 and fields[2].isdigit():
            number = int(fields[2])
            if number < _FIRST_USER_ID or number == _NOBODY:
                kept.append(line)
    return "".join(f"{line}\n" for line in kept)


def write_mask(
    layer: Path, host: Path, *, bun: bool, personal: bool = True, marks: str = "trusted"
) -> None:
    """Write the mask layer for the root file system ``host`` into the empty directory
    ``layer``. ``personal``: ``host`` is the host's own root, whose personal entries are
    hidden; a root built for sandboxes (``debian``) gets only the sandbox's own files.
    ``marks``: the namespace of the overlay's attributes (``user`` for an overlay mounted
    with ``userxattr``, ``userroot``)."""
    if personal:
        _mask_personal(layer, host)
    else:
        for name in ("paperclip-workspace", "opt"):
            if not (host / name).is_dir():
                _opaque(layer / name, 0o755, marks)
        _trust_as_the_host_does(layer)
    for name in _SKELETON:
        if name.startswith(("opt/", "usr/local/")) or personal:
            (layer / name).mkdir(parents=True, exist_ok=True)
    for found in glob.glob(str(host / "usr/lib/python3*/EXTERNALLY-MANAGED")):
        _whiteout(layer / os.path.relpath(found, host))
    (layer / "etc").mkdir(exist_ok=True)
    for name, text in _ETC.items():
        (layer / "etc" / name).write_text(text)
    if bun:
        for program in ("bun", "bunx"):
            (layer / "usr/local/bin" / program).symlink_to(f"{BUN_GUEST}/bin/{program}")


#: The host's bundle of trusted certificate authorities (Debian's and Ubuntu's path).
_HOST_CAS = Path("/etc/ssl/certs/ca-certificates.crt")
#: A CA's entry in a hashed directory: its subject's hash, a dot, a counter.
_HASHED = re.compile(r"[0-9a-f]{8}\.[0-9]+")


def _trust_as_the_host_does(layer: Path) -> None:
    """A root built for sandboxes trusts what the host trusts: its traffic leaves through the
    host's network, where a proxy that re-signs TLS (a company's, a CI runner's) is trusted by
    the host's bundle only. Programs reading the system's bundle (curl, pip, apt, git) then
    reach what the host reaches; so do those looking a CA up by its subject's hash in
    ``/etc/ssl/certs`` (OpenSSL's and BoringSSL's directory lookup: bun), whose links to a
    host's own CAs (``/usr/local/share/ca-certificates``) are copied as files."""
    certs = layer / "etc/ssl/certs"
    with contextlib.suppress(OSError):
        bundle = _HOST_CAS.read_bytes()
        certs.mkdir(parents=True, exist_ok=True)
        (certs / "ca-certificates.crt").write_bytes(bundle)
        for entry in os.scandir(_HOST_CAS.parent):
            if _HASHED.fullmatch(entry.name):
                with contextlib.suppress(OSError):
                    (certs / entry.name).write_bytes(Path(entry.path).read_bytes())


def _mask_personal(layer: Path, host: Path) -> None:
    """Hide what the host keeps personal (see the module's docstring)."""
    for entry in os.scandir(host):
        if entry.name not in _KEEP_TOP:
            _whiteout(layer / entry.name)
    for name, mode in _EMPTY:
        _opaque(layer / name, mode)
    for name in _VAR_LIB_HIDDEN:
        if os.path.lexists(host / "var/lib" / name):
            _whiteout(layer / "var/lib" / name)
    for pattern in _HIDDEN_FILES:
        for found in glob.glob(str(host / pattern)):
            _whiteout(layer / os.path.relpath(found, host))
    (layer / "etc").mkdir(exist_ok=True)
    for name in ("passwd", "group"):
        with contextlib.suppress(OSError):
            text = (host / "etc" / name).read_text()
            (layer / "etc" / name).write_text(_system_accounts(text))


def npm_path() -> str | None:
    """The host's ``npm``, which installs bun (``None`` without one)."""
    return shutil.which("npm")


def ensure_bun(progress: Callable[[str], None] | None = None) -> Path:
    """The cached bun install (a ``--prefix`` directory), built once with ``npm``.

    Raises ``RuntimeUnavailable`` saying what to do when it cannot be built (no ``npm``, the
    registry unreachable)."""
    cache = cache_dir()
    target = cache / "bun"
    if (target / "bin" / "bun").exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another fake may be building it right now
        if (target / "bin" / "bun").exists():
            return target
        npm = npm_path()
        if npm is None:
            raise RuntimeUnavailable(_build_failed("npm is not installed", cache))
        if progress is not None:
            progress(f"createos-fake: building image {DEVBOX} once: npm install bun into {cache}")
        staging = Path(tempfile.mkdtemp(prefix=".bun-", dir=cache))
        argv = [npm, "install", "--global", "--prefix", str(staging), "--no-audit", "--no-fund",
                "--loglevel=error", BUN_PACKAGE]  # fmt: skip
        try:
            done = subprocess.run(argv, capture_output=True, timeout=600, check=False)
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeUnavailable(_build_failed("npm did not finish in 600 s", cache)) from None
        if done.returncode != 0 or not (staging / "bin" / "bun").exists():
            shutil.rmtree(staging, ignore_errors=True)
            code = re.search(rb"npm (?:error|ERR!) code (\w+)", done.stderr)
            why = f"npm failed ({code.group(1).decode() if code else done.returncode})"
            raise RuntimeUnavailable(_build_failed(why, cache))
        os.rename(staging, target)
    return target


def _build_failed(why: str, cache: Path) -> str:
    return (
        f"the {DEVBOX} image cannot be built: installing bun from the npm registry failed: "
        f"{why}. Run the fake once where the npm registry is reachable (or point npm at a "
        f"registry you can reach: npm config set registry URL); the image is kept in {cache}. "
        "Or allow the fallback (serve --image-fallback, FakeCreateOS(image_fallback=True)): "
        "sandboxes then run the host's programs as user sandbox on a read-only /usr, without "
        "root or package installs"
    )
