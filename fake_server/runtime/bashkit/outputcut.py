"""bashkit's cut of a command's output, said out loud.

bashkit 0.20 passes on at most 10 MiB (10,485,760 bytes) of each output stream of one
``execute()`` and drops the rest without a word (``ExecResult.stdout_truncated``), the
command's status unchanged. The fake says so: a line on stderr after the command, naming the
stream and the limit, and status 1 where the command said 0, as a program whose output could
not all be written fails; so a test never takes a cut output for the whole of it. The
process runtime passes on any amount.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import bashkit

__all__ = ["OUTPUT_LIMIT", "cut_notice", "cut_status"]

#: Bytes of each output stream bashkit passes on for one command (not configurable there).
OUTPUT_LIMIT = 10 * 1024 * 1024


def _cut(result: bashkit.ExecResult) -> list[str]:
    return [
        name
        for name, cut in (
            ("stdout", getattr(result, "stdout_truncated", False)),
            ("stderr", getattr(result, "stderr_truncated", False)),
        )
        if cut
    ]


def cut_notice(result: bashkit.ExecResult) -> bytes | None:
    """The stderr line for a command whose output bashkit cut, else ``None``."""
    cut = _cut(result)
    if not cut:
        return None
    names = " and ".join(cut)
    return (
        f"bash: {names} cut at {OUTPUT_LIMIT} bytes: the bashkit runtime passes on at most "
        "10 MiB of a command's output (bashkit's own limit); write it to a file, or run the "
        "command on the process runtime\n"
    ).encode()


def cut_status(code: int, result: bashkit.ExecResult) -> int:
    """``code``, or 1 where it was 0 and bashkit cut the output."""
    return 1 if code == 0 and _cut(result) else code
