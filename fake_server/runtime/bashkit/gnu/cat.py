"""GNU ``cat`` for bashkit sandboxes, streaming ``/dev/zero`` and ``/dev/urandom`` in full.

bashkit's ``cat /dev/zero | head -c 5000000`` printed 1 MiB (8 KiB of ``/dev/urandom``) with
status 0. This ``cat`` streams the devices until its reader goes away (status 141, as from
SIGPIPE) and otherwise behaves as GNU's: ``-`` for stdin, ``-n -b -s -E -T -v -A -e -t -u``,
line numbers and squeezing carried across files, an error per unreadable file (status 1).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fake_server.runtime.bashkit.devices import open_stream, written

if TYPE_CHECKING:
    import bashkit

__all__ = ["cat_command"]

_TRY = "Try 'cat --help' for more information.\n"
_SHORT = {
    "A": "vET", "b": "b", "e": "vE", "E": "E", "n": "n", "s": "s", "t": "vT", "T": "T",
    "u": "", "v": "v",
}  # fmt: skip
_LONG = {
    "--show-all": "vET", "--number-nonblank": "b", "--show-ends": "E", "--number": "n",
    "--squeeze-blank": "s", "--show-tabs": "T", "--show-nonprinting": "v",
}  # fmt: skip


def _visible(byte: int) -> bytes:
    """``-v``: control characters as ``^X``, DEL as ``^?``, high bytes as ``M-``."""
    prefix = b"M-" if byte >= 128 else b""
    low = byte & 0x7F
    if low == 127:
        return prefix + b"^?"
    if low < 32 and byte not in (9, 10):
        return prefix + b"^" + bytes([low + 64])
    return prefix + bytes([low])


_VISIBLE = [_visible(byte) for byte in range(256)]


class _Usage(Exception):
    pass


def _parse(argv: list[str]) -> tuple[set[str], list[str]]:
    flags: set[str] = set()
    files: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--":
            files.extend(words)
        elif word.startswith("--"):
            if word not in _LONG:
                raise _Usage(f"unrecognized option '{word}'")
            flags.update(_LONG[word])
        elif word.startswith("-") and word != "-":
            for letter in word[1:]:
                if letter not in _SHORT:
                    raise _Usage(f"invalid option -- '{letter}'")
                flags.update(_SHORT[letter])
        else:
            files.append(word)
    return flags, files


class _Lines:
    """The line options' state, carried from one chunk (and one file) to the next."""

    def __init__(self, flags: set[str]) -> None:
        self.flags = flags
        self.number = "b" if "b" in flags else "n" if "n" in flags else ""
        self.count = 0
        self.at_start = True
        self.blanks = 0  # empty lines in a row

    def feed(self, chunk: bytes) -> bytes:
        lines = chunk.split(b"\n")
        if not lines[-1]:
            lines.pop()  # the chunk ends at a line end
            ends = [True] * len(lines)
        else:
            ends = [True] * (len(lines) - 1) + [False]
        return b"".join(self._line(text, ended) for text, ended in zip(lines, ends, strict=True))

    def _line(self, text: bytes, ended: bool) -> bytes:
        if self.at_start and not text:  # an empty line (only a line end can be empty here)
            self.blanks += 1
            if "s" in self.flags and self.blanks > 1:
                return b""
        else:
            self.blanks = 0
        head = b""
        if self.at_start and (self.number == "n" or (self.number == "b" and text)):
            self.count += 1
            head = f"{self.count:6d}\t".encode()
        self.at_start = ended
        tail = (b"$\n" if "E" in self.flags else b"\n") if ended else b""
        return head + self._show(text) + tail

    def _show(self, text: bytes) -> bytes:
        if "v" in self.flags:
            text = b"".join(_VISIBLE[byte] for byte in text)
        if "T" in self.flags:
            text = text.replace(b"\t", b"^I")
        return text


async def cat_command(ctx: bashkit.CommandContext) -> int:
    """``cat [OPTION]... [FILE]...``."""
    try:
        flags, files = _parse(list(ctx.argv))
    except _Usage as exc:
        await ctx.stderr.write(f"cat: {exc}\n{_TRY}".encode())
        return 1
    lines = _Lines(flags) if flags else None
    return await written(ctx, "cat: write error", _copy(ctx, files or ["-"], lines))


async def _copy(ctx: bashkit.CommandContext, files: list[str], lines: _Lines | None) -> int:
    status = 0
    for name in files:
        try:
            chunks = open_stream(ctx, name)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else "Input/output error"
            await ctx.stderr.write(f"cat: {name}: {reason}\n".encode())
            status = 1
            continue
        async for chunk in chunks:
            data = lines.feed(chunk) if lines is not None else chunk
            if data:
                await ctx.stdout.write(data)
    return status
