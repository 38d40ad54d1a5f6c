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

__all__ = ["MAX_ARGS_TOTAL", "MAX_ARG_BYTES", "check_argv", "check_env", "oversize", "utf8"]

#: The longest argument, or environment entry (``KEY=VALUE``), Linux passes to a program:
#: ``MAX_ARG_STRLEN``, 32 pages of 4 KiB with the string's NUL. A longer one fails ``execve``
#: with ``E2BIG`` on the service's VM as here, so the API refuses it first (400).
MAX_ARG_BYTES = 131_071
#: Bytes a command's arguments and environment entries may take together, counted as Linux
#: counts them (each string with its NUL, and its 8-byte pointer): Linux's 2 MiB under the
#: default 8 MiB stack, less 128 KiB for what the fake adds around a command (its wrapper's
#: arguments, the base environment, the sandbox's variables: at most 64 KiB).
MAX_ARGS_TOTAL = 2 * 1024 * 1024 - 128 * 1024

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


def oversize(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, str] | None:
    """``(field, message)`` when ``argv`` (``cmd`` first) or ``env`` is larger than Linux
    passes to a program, else ``None``; the fields are the exec request's."""
    total = 0
    for index, arg in enumerate(argv):
        size = len(arg.encode("utf-8", "surrogatepass"))
        if size > MAX_ARG_BYTES:
            field = "cmd" if index == 0 else "args"
            what = "is" if index == 0 else "has an argument"
            return (
                field,
                f"{what} longer than {MAX_ARG_BYTES} bytes, the most Linux passes "
                "to a program (MAX_ARG_STRLEN); pass large data as stdin or in a file",
            )
        total += size + 9
    for key, value in env.items():
        size = len(f"{key}={value}".encode("utf-8", "surrogatepass"))
        if size > MAX_ARG_BYTES:
            return (
                "env",
                f"has an entry (KEY=VALUE) longer than {MAX_ARG_BYTES} bytes, the "
                "most Linux passes to a program (MAX_ARG_STRLEN); pass large data in a file",
            )
        total += size + 9
    if total > MAX_ARGS_TOTAL:
        return (
            "args",
            f"arguments and environment take more than {MAX_ARGS_TOTAL} bytes "
            "together; pass large data as stdin or in a file",
        )
    return None
