"""Brace expansions bashkit would silently cut short, found before a script runs.

bashkit leaves a range of more than 10,000 items unexpanded (``{1..20000}`` stays one word)
and stops one word's expansions at 50,000 (``{1..100}{1..1000}`` gives 50,000 words, exit 0).
GNU bash expands both in full. The fake cannot expand them itself, so a script holding such a
brace expression fails before it starts, with status 1 and a message saying why, instead of
running on the wrong words.

Only unquoted braces count (quotes and backslashes make them literal), as in bash.
"""

from __future__ import annotations

import re

__all__ = ["RANGE_LIMIT", "WORD_LIMIT", "overflow"]

#: Items of one ``{A..B}`` range bashkit expands.
RANGE_LIMIT = 10_000
#: Words one word's brace expressions may yield in bashkit.
WORD_LIMIT = 50_000

_RANGE = re.compile(r"(?<!\$)\{(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?\}")
_LIST = re.compile(r"(?<!\$)\{([^{}\s]*,[^{}\s]*)\}")
_SPLIT = re.compile(r"[\s;&|()<>]+")


def overflow(script: str) -> str | None:
    """bash's message when ``script`` holds a brace expression bashkit would cut, else None."""
    for word in _SPLIT.split(_unquoted(script)):
        if "{" not in word:
            continue
        total = 1
        for match in _RANGE.finditer(word):
            items = _range_items(*match.groups())
            if items > RANGE_LIMIT:
                return _message(match.group(0), items, RANGE_LIMIT)
            total *= items
        for match in _LIST.finditer(word):
            total *= match.group(1).count(",") + 1
        if total > WORD_LIMIT:
            return _message(word, total, WORD_LIMIT)
    return None


def _message(text: str, items: int, limit: int) -> str:
    shown = text if len(text) <= 40 else text[:37] + "..."
    return (
        f"bash: {shown}: brace expansion of {items} words is beyond the fake's bashkit runtime "
        f"(at most {limit}); use seq, or the process runtime\n"
    )


def _range_items(first: str, last: str, step: str | None) -> int:
    if first.lstrip("-").isdigit() != last.lstrip("-").isdigit():
        return 1  # mixed letter and number: not a range, bash leaves it as it is
    a, b = (int(first), int(last)) if first.lstrip("-").isdigit() else (ord(first), ord(last))
    stride = abs(int(step)) if step and int(step) != 0 else 1
    return abs(b - a) // stride + 1


def _unquoted(script: str) -> str:
    """``script`` with every quoted or escaped character replaced by a space-free mark."""
    out: list[str] = []
    index, size = 0, len(script)
    while index < size:
        char = script[index]
        if char == "\\":
            out.append("__")
            index += 2
        elif char == "'":
            end = script.find("'", index + 1)
            end = size if end < 0 else end
            out.append("_" * (end + 1 - index))
            index = end + 1
        elif char == '"':
            end = index + 1
            while end < size and script[end] != '"':
                end += 2 if script[end] == "\\" else 1
            out.append("_" * (min(end, size) + 1 - index))
            index = end + 1
        elif char == "#" and (index == 0 or script[index - 1] in " \t\n;&|("):
            end = script.find("\n", index)
            index = size if end < 0 else end
        else:
            out.append(char)
            index += 1
    return "".join(out)
