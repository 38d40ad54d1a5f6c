"""Feeding a batch of commands to a network configuration tool (``ip -batch -``, ``nft -f -``).

Both tools read one command a line on stdin and run with an empty environment and a bound;
one function, so a hung tool is reported the same way for both."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["TIMEOUT", "run_batch"]

#: How long a tool may take before it counts as hung (seconds).
TIMEOUT = 10.0


def run_batch(
    argv: Sequence[str], commands: Sequence[str], *, tool: str
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``commands`` on its stdin; its result whatever its status, ``OSError``
    (``"<tool> did not finish in time"``) when it hangs."""
    try:
        return subprocess.run(
            argv,
            input="\n".join(commands) + "\n",
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            env={},
        )
    except subprocess.TimeoutExpired:
        raise OSError(f"{tool} did not finish in time") from None
