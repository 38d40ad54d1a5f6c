"""``seq`` and ``yes`` without bashkit's silent caps (100,000 lines and 10,000 lines, exit 0).

Both stream their output in 64 KiB writes. bashkit's pipes apply back-pressure and raise
``BrokenPipeError`` once the reader has gone, so ``yes | head -n 50000`` ends like GNU's (the
writer with status 141, as from SIGPIPE) and ``seq 200000 | tail -1`` prints 200000.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from fake_server.runtime.bashkit.devices import written

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import bashkit

__all__ = ["seq_command", "yes_command"]

_CHUNK = 64 * 1024
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_FORMAT = re.compile(r"^([^%]|%%)*%[-+ #0']*\d*(\.\d+)?[aAeEfFgG]([^%]|%%)*$")


async def yes_command(ctx: bashkit.CommandContext) -> int:
    """``yes [STRING]...``: the line forever, until the reader goes away."""
    words = list(ctx.argv)
    if words[:1] == ["--"]:
        words = words[1:]
    line = (" ".join(words) if words else "y").encode() + b"\n"
    block = line * max(1, _CHUNK // len(line))
    return await written(ctx, "yes: standard output", _repeat(ctx, block))


async def _repeat(ctx: bashkit.CommandContext, block: bytes) -> int:
    while True:
        await ctx.stdout.write(block)


async def seq_command(ctx: bashkit.CommandContext) -> int:
    """GNU ``seq [-w] [-s SEP] [-f FORMAT] [FIRST [INCREMENT]] LAST``, any length."""
    try:
        numbers = _Seq.parse(list(ctx.argv))
    except _Usage as exc:
        await ctx.stderr.write(f"seq: {exc}\nTry 'seq --help' for more information.\n".encode())
        return 1
    return await written(ctx, "seq: write error", _write_lines(ctx, numbers))


async def _write_lines(ctx: bashkit.CommandContext, numbers: _Seq) -> int:
    """The numbers in 64 KiB writes (one per line would cost a hop through bashkit each)."""
    pending: list[str] = []
    size = 0
    for index, text in enumerate(numbers.lines()):
        piece = text if index == 0 else numbers.separator + text
        pending.append(piece)
        size += len(piece)
        if size >= _CHUNK:
            await ctx.stdout.write("".join(pending).encode())
            pending, size = [], 0
    if numbers.wrote_any:
        pending.append("\n")
    if pending:
        await ctx.stdout.write("".join(pending).encode())
    return 0


class _Usage(Exception):
    pass


class _Seq:
    def __init__(self) -> None:
        self.separator = "\n"
        self.format: str | None = None
        self.equal_width = False
        self.first = Decimal(1)
        self.step = Decimal(1)
        self.last = Decimal(1)
        self.texts: list[str] = []
        self.wrote_any = False

    @classmethod
    def parse(cls, args: list[str]) -> _Seq:
        seq = cls()
        operands: list[str] = []
        while args:
            arg = args.pop(0)
            if arg == "--":
                operands.extend(args)
                break
            if not arg.startswith("-") or _NUMBER.match(arg) or arg == "-":
                operands.append(arg)
            elif arg in ("-s", "--separator", "-f", "--format"):
                if not args:
                    raise _Usage(f"option requires an argument -- '{arg.lstrip('-')[0]}'")
                value = args.pop(0)
                seq._option(arg.lstrip("-")[0], value)
            elif arg.startswith(("-s", "-f")):
                seq._option(arg[1], arg[2:])
            elif arg.startswith(("--separator=", "--format=")):
                name, _, value = arg.partition("=")
                seq._option(name[2], value)
            elif arg in ("-w", "--equal-width"):
                seq.equal_width = True
            else:
                raise _Usage(f"invalid option -- '{arg.lstrip('-')[:1]}'")
        if not operands:
            raise _Usage("missing operand")
        if len(operands) > 3:
            raise _Usage(f"extra operand '{operands[3]}'")
        values = [_number(text) for text in operands]
        seq.texts = operands
        if len(values) == 1:
            seq.last = values[0]
        elif len(values) == 2:
            seq.first, seq.last = values
        else:
            seq.first, seq.step, seq.last = values
        if seq.step == 0:
            raise _Usage(f"invalid Zero increment value: '{operands[1]}'")
        if seq.format is not None and seq.equal_width:
            raise _Usage("format string may not be specified when printing equal width strings")
        return seq

    def _option(self, name: str, value: str) -> None:
        if name == "s":
            self.separator = value
            return
        if not _FORMAT.match(value):
            raise _Usage(f"invalid format string: '{value}'")
        self.format = value.replace("'", "")

    def lines(self) -> Iterator[str]:
        render = self._renderer()
        value, index = self.first, 0
        while (self.step > 0 and value <= self.last) or (self.step < 0 and value >= self.last):
            self.wrote_any = True
            yield render(value)
            index += 1
            value = self.first + index * self.step

    def _renderer(self) -> Callable[[Decimal], str]:
        if self.format is not None:
            fmt = self.format
            return lambda value: fmt % float(value)
        places = max(_places(self.texts[0]) if len(self.texts) > 1 else 0, _places(self.step_text))
        if self.equal_width:
            width = max(len(_fixed(v, places)) for v in (self.first, self.last))
            return lambda value: _pad(_fixed(value, places), width)
        return lambda value: _fixed(value, places)

    @property
    def step_text(self) -> str:
        return self.texts[1] if len(self.texts) == 3 else "1"


def _number(text: str) -> Decimal:
    if not _NUMBER.match(text):
        raise _Usage(f"invalid floating point argument: '{text}'")
    try:
        return Decimal(text)
    except InvalidOperation:
        raise _Usage(f"invalid floating point argument: '{text}'") from None


def _places(text: str) -> int:
    """Digits after the point as GNU seq counts them (``1.50`` has 2, ``1e2`` has 0)."""
    mantissa, _, exponent = text.lower().partition("e")
    _, _, fraction = mantissa.partition(".")
    return max(0, len(fraction) - (int(exponent) if exponent else 0))


def _fixed(value: Decimal, places: int) -> str:
    return f"{value:.{places}f}"


def _pad(text: str, width: int) -> str:
    sign = "-" if text.startswith("-") else ""
    return sign + text[len(sign) :].rjust(width - len(sign), "0")
