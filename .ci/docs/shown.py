"""Shown output against real output: what may differ between runs, and how lines match.

A page's output block lists lines the real output has, in order (other real lines may come
between them: a block shows the part the text talks about). Before comparing, both sides go
through ``normalise``, which blanks what differs from run to run:

- object addresses (``at 0x7f…``), UUIDs, random keys (``cos_live_…``, ``cos_fake_…``);
- ports of a loopback address (``127.0.0.1:8080`` and ``127.0.0.1:41234`` are the same);
- durations (``6.1ms``, ``in 0.24s``);
- the page's project directory (``/tmp/docs-project-…``), shown as ``.``.

A ``…`` in a shown line stands for any text (the page cuts a long line, or elides what the
host decides, such as its distribution); pytest's own ``...`` inside a repr is compared as is.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["SHOWN_LANGUAGES", "compare", "normalise"]

#: Fenced blocks that show something rather than run: each needs ``<!-- output -->`` or
#: ``<!-- illustrative: "why" -->`` before it.
SHOWN_LANGUAGES = ("text", "console", "json", "yaml", "")

_BLANKS = (
    (re.compile(r"\bat 0x[0-9a-f]+"), "at 0x…"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "…"),
    (re.compile(r"\b(cos_(?:live|fake))_[0-9A-Za-z_]+"), r"\1_…"),
    (re.compile(r"\b(127\.0\.0\.1|localhost):\d+"), r"\1:…"),
    (re.compile(r"\b\d+(?:\.\d+)?ms\b"), "…ms"),
    (re.compile(r"\bin \d+\.\d+s\b"), "in …s"),
)


def normalise(line: str, project: str = "") -> str:
    """``line`` with what varies between runs blanked (see the module's docstring)."""
    if project:
        line = line.replace(project, ".")
    for pattern, blank in _BLANKS:
        line = pattern.sub(blank, line)
    return line.rstrip()


def _pattern(shown: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in shown.split("…")]
    return re.compile(".*".join(parts) + r"\Z")


def compare(shown: Sequence[str], real: Sequence[str], project: str = "") -> str | None:
    """Why ``shown`` is not in ``real`` (normalised, in order), or None when it is."""
    wanted = [normalise(line, project) for line in shown if line.strip()]
    have = [normalise(line, project) for line in real]
    position = 0
    for line in wanted:
        pattern = _pattern(line)
        found = next((i for i in range(position, len(have)) if pattern.match(have[i])), None)
        if found is None:
            return (
                f"shown output line not in the real output (in order, normalised): {line!r}\n"
                "--- real (normalised)\n" + "\n".join(have)
            )
        position = found + 1
    return None
