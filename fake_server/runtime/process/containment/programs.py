"""A helper program the runtime runs and waits for (``mount``, ``cp``, ``nsenter`` writing a
map): one place that says how it failed, by its last line of error, never its output."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["PATH", "run"]

#: Where the helpers are (``/sbin`` may not be on the fake's own ``PATH``).
PATH = "/usr/bin:/bin:/usr/sbin:/sbin"


def run(
    argv: Sequence[str],
    *,
    what: str,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run ``argv`` (with ``env``, else only ``PATH``) until it exits; ``OSError``
    (``"<what> failed: <its last line of error>"``) when it fails, and (``"<what> did not
    finish in <timeout> s"``) when it is still running after ``timeout`` seconds."""
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            check=False,
            timeout=timeout,
            env=dict(env) if env is not None else {"PATH": PATH},
        )
    except subprocess.TimeoutExpired:
        raise OSError(f"{what} did not finish in {timeout:g} s") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise OSError(f"{what} failed: {(lines or ['?'])[-1][:200]}")
