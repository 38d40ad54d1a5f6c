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
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from fake_server.runtime.api import RuntimeUnavailable

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["NAME", "PACKAGES", "SUITE", "build", "built", "tree"]

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


def tree(cache: Path) -> Path:
    """Where the tree is (or will be) in the image cache ``cache``."""
    return cache / f"devbox-debian13-{SUITE}"


def built(cache: Path) -> Path | None:
    """The tree, if a build finished (a half-made one is not taken)."""
    path = tree(cache)
    return path if (path / _MARKER).exists() else None


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


def _builder() -> list[str] | None:
    """The command line that builds a tree into the path appended to it, or ``None``."""
    packages = ",".join(PACKAGES)
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is not None:
        return [mmdebstrap, "--quiet", "--variant=apt", f"--include={packages}", SUITE]
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin")
    if debootstrap is not None:
        return [debootstrap, "--variant=minbase", f"--include={packages}", SUITE]
    return None


def build(cache: Path, progress: Callable[[str], None] | None = None) -> Path:
    """The tree, built now if it is not (``RuntimeUnavailable`` saying what to do when it
    cannot be: not root, no builder, the mirror unreachable)."""
    done = built(cache)
    if done is not None:
        return done
    if os.geteuid() != 0:
        raise RuntimeUnavailable(_failed("it needs root", cache))
    command = _builder()
    if command is None:
        raise RuntimeUnavailable(
            _failed(
                "neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)",
                cache,
            )
        )
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another fake may be building it right now
        done = built(cache)
        if done is not None:
            return done
        source = mirror()
        if progress is not None:
            progress(
                f"createos-fake: building image devbox:1 once: {NAME} from {source} into "
                f"{cache} (a few minutes)"
            )
        staging = Path(tempfile.mkdtemp(prefix=".debian-", dir=cache))
        try:
            result = subprocess.run(
                [*command, str(staging), source],
                capture_output=True,
                timeout=_TIMEOUT,
                check=False,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8"},
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeUnavailable(_failed(f"it did not finish in {_TIMEOUT} s", cache)) from None
        if result.returncode != 0 or not (staging / "usr/bin/python3").exists():
            shutil.rmtree(staging, ignore_errors=True)
            lines = result.stderr.decode(errors="replace").strip().splitlines()
            why = f"{Path(command[0]).name} failed (status {result.returncode})"
            raise RuntimeUnavailable(_failed(f"{why}: {lines[-1][:200] if lines else ''}", cache))
        (staging / _MARKER).write_text(f"{SUITE}\n")
        target = tree(cache)
        shutil.rmtree(target, ignore_errors=True)
        os.rename(staging, target)
    return target


def _failed(why: str, cache: Path) -> str:
    return (
        f"the {NAME} image for devbox:1 cannot be built: {why}. Sandboxes boot the host's own "
        f"programs until it is (createos-fake image builds it into {cache})"
    )
