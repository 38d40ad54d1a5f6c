"""desktop:1's programs: the Debian 13 tree with an X desktop added, built once per machine.

``createos-fake image`` builds it after the devbox tree (``debian``): a hard-linked copy of that
tree (no second gigabyte: dpkg replaces a file by renaming a new one over it, so the copy's
changes never reach the devbox tree's files) where ``apt-get`` installs ``PACKAGES`` from the
same mirror, in a mount namespace of its own with ``/proc`` and ``/dev``. What it adds, and why
each is the smallest that does the job:

- ``xvfb``: the X server, drawing into memory (no GPU, no display); it brings Mesa (with LLVM:
  most of the ~57 MB downloaded, ~220 MB installed), which ``xvfb`` depends on;
- ``evilwm``: a window manager of 60 KB that keeps the EWMH lists clients and ``xdotool``
  read (``_NET_CLIENT_LIST``, ``_NET_ACTIVE_WINDOW``, maximized state); openbox or jwm bring
  30-60 more packages for title bars the API never shows;
- ``xdotool``: every click, move, key and typed text (XTEST), and the window actions;
- ``python3-xlib``: the screenshot (one ``GetImage`` of the root window; the fake encodes the
  PNG with Pillow) and the window list, with ``python3`` already in the tree: ``import`` from
  ImageMagick or ``xwd`` with a converter would add tens of packages;
- ``xclip``: the clipboard; ``xterm``: a program that draws, reads keys and runs commands.

desktop:1 sandboxes boot this tree when it is built (``system``); every other rootfs boots the
devbox tree, without these programs.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.process.images import debian

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PACKAGES", "build", "built", "tree"]

PACKAGES = ("xvfb", "evilwm", "xdotool", "python3-xlib", "xclip", "xterm")
_MARKER = ".createos-desktop"
_TIMEOUT = 1800
#: Run in the copy (``$1``) in a mount namespace of its own: apt needs /proc and /dev (the
#: tree's apt sources and resolver are the ones mmdebstrap wrote).
_INSTALL = """
set -e
root=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
chroot "$root" apt-get update -qq
chroot "$root" apt-get install -y -qq --no-install-recommends "$@"
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/*
"""


def tree(cache: Path) -> Path:
    """Where the tree is (or will be) in the image cache ``cache``."""
    return cache / f"{debian.tree(cache).name}-desktop"


def built(cache: Path) -> Path | None:
    """The tree, if a build finished (a half-made one is not taken)."""
    path = tree(cache)
    return path if (path / _MARKER).exists() else None


def build(cache: Path, base: Path, progress: Callable[[str], None] | None = None) -> Path:
    """The tree, built now from the devbox tree ``base`` if it is not (``RuntimeUnavailable``
    saying why when it cannot be)."""
    done = built(cache)
    if done is not None:
        return done
    with open(cache / ".lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another fake may be building it right now
        done = built(cache)
        if done is not None:
            return done
        if progress is not None:
            progress(
                f"createos-fake: adding desktop:1's X desktop once ({', '.join(PACKAGES)}) "
                f"from {debian.mirror()}"
            )
        staging = Path(tempfile.mkdtemp(prefix=".desktop-", dir=cache))
        try:
            _install(base, staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        (staging / _MARKER).write_text(" ".join(PACKAGES) + "\n")
        target = tree(cache)
        shutil.rmtree(target, ignore_errors=True)
        os.rename(staging, target)
    return target


def _install(base: Path, staging: Path) -> None:
    copied = subprocess.run(
        ["cp", "-al", "--", f"{base}/.", str(staging)], capture_output=True, check=False
    )
    if copied.returncode != 0:
        raise RuntimeUnavailable(_failed("the devbox tree cannot be copied"))
    command = [*_installer(), str(staging)]
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "LC_ALL": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
    }
    try:
        result = subprocess.run(
            [*command, *PACKAGES], capture_output=True, timeout=_TIMEOUT, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        raise RuntimeUnavailable(_failed(f"it did not finish in {_TIMEOUT} s")) from None
    if result.returncode != 0 or not (staging / "usr/bin/Xvfb").exists():
        lines = result.stderr.decode(errors="replace").strip().splitlines()
        why = f"apt-get failed (status {result.returncode})"
        raise RuntimeUnavailable(_failed(f"{why}: {lines[-1][:200] if lines else ''}"))


def _installer() -> list[str]:
    """The command line that installs the packages appended to it into the tree before them."""
    return ["unshare", "--mount", "--fork", "sh", "-c", _INSTALL, "sh"]


def _failed(why: str) -> str:
    return (
        f"desktop:1's X desktop cannot be added to the {debian.NAME} image: {why}. "
        "Computer use on the process runtime answers 409 until it is (createos-fake image)"
    )
