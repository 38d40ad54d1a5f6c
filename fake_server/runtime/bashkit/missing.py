"""What bashkit's ``command not found`` adds: which runtime has the program, how to choose it.

The bashkit runtime is an in-memory bash with its own builtins; real programs (``python3``,
``node``, ``git``) run on the process runtime, which runs the host's ``/usr`` under
bubblewrap. A program bashkit lacks but the host has gets the way to reach it appended to the
line; a name the host lacks too (a typo) keeps bash's plain message.
"""

from __future__ import annotations

import functools
import re
import shutil

__all__ = ["DEFAULT_CHOICE", "with_runtime_hint"]

#: How to choose the process runtime when nothing more specific was set.
DEFAULT_CHOICE = 'FakeCreateOS(runtime="process")'
_HOST_PATH = "/usr/local/bin:/usr/bin:/bin"
#: bash's line for a missing program, and ``env``'s (the provider runs commands through it).
_NOT_FOUND = re.compile(
    rb"(?:([^\s:/']+): command not found|^env: '([^'/]+)': No such file or directory)$",
    re.MULTILINE,
)


@functools.cache
def _on_host(program: str) -> bool:
    return shutil.which(program, path=_HOST_PATH) is not None


def with_runtime_hint(stderr: bytes, choice: str) -> bytes:
    """``stderr`` with each missing-program line about a host program explained."""

    def explain(found: re.Match[bytes]) -> bytes:
        name = (found.group(1) or found.group(2)).decode(errors="replace")
        if not _on_host(name):
            return found.group(0)
        hint = (
            f" (the bashkit runtime has no {name}; run real programs with the process runtime: "
            f"{choice})"
        )
        return found.group(0) + hint.encode()

    return _NOT_FOUND.sub(explain, stderr)
