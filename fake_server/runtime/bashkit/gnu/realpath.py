"""GNU ``realpath`` over the virtual filesystem (bashkit's builtin does not follow symlinks).

The provider's remote guard relies on it: ``realpath`` of the workspace root must equal
``/paperclip-workspace`` and ``realpath -m`` of a target must stay under it, with every symlink
on the way resolved.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from fake_server.runtime.bashkit import vfs

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import bashkit

__all__ = ["realpath_command"]

_TRY = "Try 'realpath --help' for more information.\n"
_MESSAGES = {
    errno.ENOENT: "No such file or directory",
    errno.ENOTDIR: "Not a directory",
    errno.ELOOP: "Too many levels of symbolic links",
}


def realpath_command(fs: bashkit.FileSystem) -> Callable[[bashkit.CommandContext], Awaitable[int]]:
    """``realpath [-e|-m] [-s] [-q] [-z] [--] FILE...`` over the disk ``fs``.

    The interpreter's own ``ctx.fs`` follows symlinks in ``stat``, so the disk is used instead.
    """

    async def realpath(ctx: bashkit.CommandContext) -> int:
        missing: vfs.Missing = "last"
        follow = True
        quiet = False
        end = "\n"
        operands: list[str] = []
        args = list(ctx.argv)
        while args:
            arg = args.pop(0)
            if arg == "--":
                operands.extend(args)
                break
            if arg.startswith("--") and arg != "--":
                long = {
                    "--canonicalize-existing": "e",
                    "--canonicalize-missing": "m",
                    "--no-symlinks": "s",
                    "--strip": "s",
                    "--quiet": "q",
                    "--zero": "z",
                    "--logical": "L",
                    "--physical": "P",
                }.get(arg)
                if long is None:
                    message = f"realpath: unrecognized option '{arg}'\n{_TRY}"
                    await ctx.stderr.write(message.encode())
                    return 1
                letters = long
            elif arg.startswith("-") and arg != "-":
                letters = arg[1:]
            else:
                operands.append(arg)
                continue
            for letter in letters:
                if letter == "e":
                    missing = "none"
                elif letter == "m":
                    missing = "all"
                elif letter == "s":
                    follow = False
                elif letter == "q":
                    quiet = True
                elif letter == "z":
                    end = "\0"
                elif letter in "LP":
                    continue
                else:
                    message = f"realpath: invalid option -- '{letter}'\n{_TRY}"
                    await ctx.stderr.write(message.encode())
                    return 1
        if not operands:
            await ctx.stderr.write(f"realpath: missing operand\n{_TRY}".encode())
            return 1
        status = 0
        out: list[str] = []
        for operand in operands:
            try:
                if not operand:
                    raise OSError(errno.ENOENT, "")
                if follow:
                    out.append(vfs.resolve(fs, operand, cwd=ctx.cwd, missing=missing) + end)
                else:
                    out.append(_lexical(operand, ctx.cwd) + end)
            except OSError as exc:
                status = 1
                if out:
                    await ctx.stdout.write("".join(out).encode())
                    out.clear()
                if not quiet:
                    reason = _MESSAGES.get(exc.errno or 0, "Input/output error")
                    await ctx.stderr.write(f"realpath: {operand}: {reason}\n".encode())
        if out:
            await ctx.stdout.write("".join(out).encode())
        return status

    return realpath


def _lexical(path: str, cwd: str) -> str:
    parts: list[str] = []
    for part in vfs.abspath(path, cwd).split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)
