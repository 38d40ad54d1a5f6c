"""What both runtimes check of a command before running it: its argv and environment.

Bad values raise ``TypeError`` or ``ValueError`` (the API answers 400 before any reaches a
runtime); lone surrogates, from JSON ``\\udcxx`` escapes, become U+FFFD as Go's JSON decoder
makes them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["check_argv", "check_env", "utf8"]

_SURROGATE = re.compile("[\\ud800-\\udfff]")


def utf8(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (encodable as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def check_argv(argv: Sequence[str]) -> list[str]:
    """A non-empty list of strings without NUL, naming a command first."""
    if isinstance(argv, str | bytes):
        raise TypeError("argv must be a sequence of strings, not a string")
    args = list(argv)
    if not args or not args[0]:
        raise ValueError("argv must name a command")
    for arg in args:
        if not isinstance(arg, str):
            raise TypeError("argv items must be strings")
        if "\0" in arg:
            raise ValueError("argv must not contain NUL")
    return [utf8(arg) for arg in args]


def check_env(env: Mapping[str, str]) -> dict[str, str]:
    """String keys and values; keys non-empty, without ``=``; neither with NUL."""
    checked: dict[str, str] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("environment keys and values must be strings")
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError("environment keys must be non-empty without '=' or NUL")
        checked[utf8(key)] = utf8(value)
    return checked
