"""Why an exec has not answered though its program exited: a process it left holds its output.

``bash -c 'server &'`` exits at once, but ``server`` inherited the exec's stdout and stderr;
the exec's reply (and its exit frame) waits until every holder closed them, as on the service,
which waits for the output's end. From outside that looks like a hang ("no reply"). The fake
knows the pipes (``Run.pipes``) and who holds them (``tree.holding``), so once the program has
exited and the output has stayed open for ``NOTICE_AFTER`` real seconds, it says so, with the
holders' pids (as the sandbox sees them) and command lines, and what to do instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["NOTICE_AFTER", "describe", "drain", "held_open_text"]

#: Real seconds the output may stay open after the program exited before the fake looks for
#: who holds it. Only when to look: what is said comes from ``/proc``, never from a guess.
NOTICE_AFTER = 0.5
#: Holders named, and characters of each command line shown.
_NAMED, _COMMAND = 3, 80


def describe(pid: int) -> str:
    """``pid 7 (sleep 100)``: the pid as the sandbox sees it (its own pid namespace's) and the
    command line, cut at ``_COMMAND`` characters."""
    shown = pid
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    shown = int(line.split()[-1])
                    break
    command = "?"
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read().rstrip(b"\0").split(b"\0")
        command = b" ".join(words).decode(errors="replace") or "?"
    if len(command) > _COMMAND:
        command = command[: _COMMAND - 1] + "…"
    return f"pid {shown} ({command})"


def held_open_text(program: str, code: int, holders: Sequence[int]) -> str:
    """The explanation for ``program``, which exited with ``code`` while ``holders`` keep its
    output open."""
    named = ", ".join(describe(pid) for pid in holders[:_NAMED])
    more = f" and {len(holders) - _NAMED} more" if len(holders) > _NAMED else ""
    name = posixpath.basename(program)[:_COMMAND] or "the program"
    return (
        f"{name} exited ({code}) but {named}{more} still holds its stdout or stderr: the "
        "output does not end, and the reply waits for it; redirect its output "
        "(>/dev/null 2>&1) or use setsid/nohup with >file"
    )


async def drain(
    pumps: Sequence[asyncio.Future[None]],
    exited: tuple[str, int],
    holders: Callable[[], list[int]],
    held_open: Callable[[str], None] | None,
) -> None:
    """Wait until the output ends (``pumps`` done); if it has not ended ``NOTICE_AFTER``
    seconds after the program (``exited``: its name and status) exited, say once to
    ``held_open`` who keeps it open."""
    if held_open is not None:
        _done, pending = await asyncio.wait(pumps, timeout=NOTICE_AFTER)
        if pending:
            found = holders()
            if found:
                held_open(held_open_text(*exited, found))
    await asyncio.gather(*pumps)
