"""A command whose output comes from several writers at once, and the check that every byte of
it arrived: each writer prints numbered lines, and each line must arrive exactly once, whole,
in its writer's order, on its writer's stream.

The writers cover the ways a shell hands its pipes on: a background job, a subshell, a
background job writing to stderr, a pipe into ``cat``, a group writing to both streams, a
pipe into ``cat`` on stderr (with long multi-byte lines in ``LONG_SCRIPT``: they cross the
runtimes' 64 KiB reads, so a UTF-8 character is cut between two reads), and the shell itself
after the background writers finished (``wait``). Every line carries multi-byte characters.
"""

from __future__ import annotations

import re

__all__ = ["LINES", "LONG_SCRIPT", "SCRIPT", "WRITERS", "missing"]

#: Lines per writer.
LINES = 12
#: Characters of the long lines' padding (2 bytes each in UTF-8).
_PAD = 3000

_BODY = rf"""
w() {{ i=1; while [ $i -le {LINES} ]; do echo "$1:$i:é✓$2"; i=$((i+1)); done; }}
w a &
( w b ) &
w c >&$e &
w d | cat &
{{ w e; w f >&$e; }} &
w g "$pad" | cat >&2
wait
w h
"""
#: The writers, the long lines' padding empty.
SCRIPT = "pad=\ne=2\n" + _BODY
#: The same with the long lines (72 KiB on stderr): slower, so run less often. Their writer
#: is alone on stderr (``c`` and ``f`` write to stdout): a pipe keeps a write whole only up to
#: 4096 bytes, so another writer's line could land inside a long one, as on any Linux.
LONG_SCRIPT = f"pad=$(printf 'é%.0s' $(seq 1 {_PAD}))\ne=1\n" + _BODY

#: Each writer's stream in ``SCRIPT``; in ``LONG_SCRIPT`` ``c`` and ``f`` write to stdout.
WRITERS = {"a": "stdout", "b": "stdout", "c": "stderr", "d": "stdout", "e": "stdout",
           "f": "stderr", "g": "stderr", "h": "stdout"}  # fmt: skip
_LONG_WRITERS = {**WRITERS, "c": "stdout", "f": "stdout"}

_LINE = re.compile(rf"([a-h]):(\d+):é✓((?:é{{{_PAD}}})?)")


def missing(stdout: str, stderr: str, *, long: bool = False) -> str | None:
    """What is wrong with the output of ``SCRIPT`` (``LONG_SCRIPT`` with ``long``): lines
    lost, repeated, reordered, cut or foreign; None when it is all there."""
    for stream, text in (("stdout", stdout), ("stderr", stderr)):
        if text and not text.endswith("\n"):
            return f"{stream} ends inside a line"
        seen: dict[str, list[int]] = {}
        for line in text.splitlines():
            match = _LINE.fullmatch(line)
            if match is None:
                return f"{stream} holds a line no writer wrote: {line[:80]!r}"
            if bool(match.group(3)) != (long and match.group(1) == "g"):
                return f"{stream} holds a line whose padding was cut: {line[:80]!r}"
            seen.setdefault(match.group(1), []).append(int(match.group(2)))
        for writer, home in (_LONG_WRITERS if long else WRITERS).items():
            got = seen.get(writer, [])
            if got != (list(range(1, LINES + 1)) if home == stream else []):
                return f"writer {writer} on {stream}: lines {got}"
    return None
