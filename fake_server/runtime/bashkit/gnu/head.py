"""GNU ``head`` for bashkit sandboxes, reading ``/dev/zero`` and ``/dev/urandom`` in full.

bashkit's devices give at most 1 MiB (``/dev/zero``) or 8 KiB (``/dev/urandom``,
``/dev/random``) per read, so its ``head -c 5000000 /dev/zero`` printed 1 MiB with status 0.
This ``head`` streams those devices itself, as many bytes as asked, and otherwise behaves as
GNU's: ``-c``/``-n`` with ``[-]NUM`` and size suffixes, ``-NUM``, ``-q``/``-v``, ``-z``, headers
for several files, ``-`` for stdin, status 141 when the reader goes away.
"""

from __future__ import annotations

import errno
import os
import re
from typing import TYPE_CHECKING

from fake_server.runtime.bashkit.devices import open_stream, written

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import bashkit

__all__ = ["head_command"]

_CHUNK = 64 * 1024
_SUFFIXES = {
    "": 1, "b": 512, "kB": 1000, "K": 1024, "KiB": 1024, "k": 1024, "MB": 1000**2, "M": 1024**2,
    "MiB": 1024**2, "GB": 1000**3, "G": 1024**3, "GiB": 1024**3, "TB": 1000**4, "T": 1024**4,
    "TiB": 1024**4,
}  # fmt: skip
_NUMBER = re.compile(r"^(-?)(\d+)([A-Za-z]*)$")


class _Usage(Exception):
    pass


class _BadNumber(_Usage):
    """An invalid count: GNU prints no ``Try 'head --help'`` line for it."""


class _Options:
    def __init__(self, argv: list[str]) -> None:
        self.count, self.bytes, self.all_but = 10, False, False
        self.headers: bool | None = None
        self.delimiter = b"\n"
        self.files: list[str] = []
        words = iter(argv)
        for word in words:
            if word == "--":
                self.files.extend(words)
                break
            if re.fullmatch(r"-\d+", word):
                self._count(word[1:], lines=True)
            elif word in ("-c", "--bytes", "-n", "--lines"):
                value = next(words, None)
                if value is None:
                    raise _Usage(f"option requires an argument -- '{word.lstrip('-')[0]}'")
                self._count(value, lines=word in ("-n", "--lines"))
            elif word.startswith(("--bytes=", "--lines=")):
                self._count(word.split("=", 1)[1], lines=word.startswith("--lines"))
            elif word.startswith(("-c", "-n")) and len(word) > 2:
                self._count(word[2:], lines=word[1] == "n")
            elif word in ("-q", "--quiet", "--silent"):
                self.headers = False
            elif word in ("-v", "--verbose"):
                self.headers = True
            elif word in ("-z", "--zero-terminated"):
                self.delimiter = b"\0"
            elif word.startswith("-") and word != "-":
                raise _Usage(f"invalid option -- '{word.lstrip('-')[:1]}'")
            else:
                self.files.append(word)

    def _count(self, text: str, *, lines: bool) -> None:
        match = _NUMBER.match(text)
        if match is None or match[3] not in _SUFFIXES:
            kind = "lines" if lines else "bytes"
            raise _BadNumber(f"invalid number of {kind}: '{text}'")
        self.count = int(match[2]) * _SUFFIXES[match[3]]
        self.all_but, self.bytes = bool(match[1]), not lines


async def head_command(ctx: bashkit.CommandContext) -> int:
    """``head [OPTION]... [FILE]...``."""
    try:
        options = _Options(list(ctx.argv))
    except _Usage as exc:
        hint = "" if isinstance(exc, _BadNumber) else "Try 'head --help' for more information.\n"
        await ctx.stderr.write(f"head: {exc}\n{hint}".encode())
        return 1
    files = options.files or ["-"]
    return await written(ctx, "head: write error", _heads(ctx, files, options))


async def _heads(ctx: bashkit.CommandContext, files: list[str], options: _Options) -> int:
    headers = options.headers if options.headers is not None else len(files) > 1
    status = 0
    for index, name in enumerate(files):
        try:
            chunks = open_stream(ctx, name)
        except OSError as exc:
            await ctx.stderr.write(_open_error(name, exc))
            status = 1
            continue
        if headers:
            title = "standard input" if name == "-" else name
            await ctx.stdout.write(f"{chr(10) if index else ''}==> {title} <==\n".encode())
        await _copy(ctx, chunks, options)
    return status


def _open_error(name: str, exc: OSError) -> bytes:
    reason = os.strerror(exc.errno) if exc.errno else "Input/output error"
    if exc.errno == errno.EISDIR:
        return f"head: error reading '{name}': {reason}\n".encode()
    return f"head: cannot open '{name}' for reading: {reason}\n".encode()


async def _copy(
    ctx: bashkit.CommandContext, chunks: AsyncIterator[bytes], options: _Options
) -> None:
    count, delimiter = options.count, options.delimiter
    if options.all_but:
        await _all_but(ctx, chunks, options)
        return
    if count == 0:
        return
    async for chunk in chunks:
        if options.bytes:
            piece = chunk[:count]
            count -= len(piece)
        else:
            end = 0
            while count and (found := chunk.find(delimiter, end)) >= 0:
                end, count = found + 1, count - 1
            piece = chunk[:end] if not count else chunk
        for at in range(0, len(piece), _CHUNK):
            await ctx.stdout.write(piece[at : at + _CHUNK])
        if not count:
            return


async def _all_but(
    ctx: bashkit.CommandContext, chunks: AsyncIterator[bytes], options: _Options
) -> None:
    """``-c -N``/``-n -N``: everything but the last N bytes or lines."""
    if options.bytes:
        held = b""
        async for chunk in chunks:
            held += chunk
            if len(held) > options.count:
                cut = len(held) - options.count
                await ctx.stdout.write(held[:cut])
                held = held[cut:]
        return
    data = b"".join([chunk async for chunk in chunks])
    lines = data.split(options.delimiter)
    ended = data.endswith(options.delimiter)
    if ended:
        lines.pop()
    kept = lines[: max(0, len(lines) - options.count)]
    if kept:
        text = options.delimiter.join(kept)
        await ctx.stdout.write(
            text + (options.delimiter if ended or len(kept) < len(lines) else b"")
        )
