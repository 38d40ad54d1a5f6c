"""``stty`` and ``tty`` for bashkit sandboxes: the PTY's window size and name, or GNU's
answers without a terminal.

bashkit has no terminal devices. In a PTY process ``stty size`` prints the window the create
request and the resize API gave (``rows cols``), and the settings programs change in passing
(``stty -echo``, ``stty raw``, ``stty sane``) are accepted without effect. Without a PTY, stdin
is not a terminal, and ``stty`` fails as GNU's does there. ``tty`` names the PTY as the
process runtime's does (``/dev/pts/0``; bashkit's own says ``not a tty`` even on one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import bashkit

    from fake_server.runtime.bashkit.adapters import CommandCallback
    from fake_server.runtime.terminal import Terminal

__all__ = ["PTY_NAME", "stty_command", "tty_command"]

#: The name ``tty`` prints in a PTY process: the first terminal of the sandbox's own devpts.
PTY_NAME = "/dev/pts/0"

_NOT_A_TTY = b"stty: 'standard input': Inappropriate ioctl for device\n"


def stty_command(terminal: Terminal | None) -> CommandCallback:
    """The ``stty`` of one run; ``terminal`` is its PTY's window, ``None`` without a PTY."""

    async def stty(ctx: bashkit.CommandContext) -> int:
        if terminal is None:
            await ctx.stderr.write(_NOT_A_TTY)
            return 1
        words = list(ctx.argv)
        rows, cols = terminal.size
        if words == ["size"]:
            await ctx.stdout.write(f"{rows} {cols}\n".encode())
        elif words in (["-a"], ["--all"], []):
            line = f"speed 38400 baud; rows {rows}; columns {cols}; line = 0;\n"
            await ctx.stdout.write(line.encode())
        return 0

    return stty


def tty_command(terminal: Terminal | None) -> CommandCallback:
    """The ``tty`` of one run: the PTY's name, or GNU's ``not a tty`` (status 1) without one;
    ``-s`` prints nothing."""

    async def tty(ctx: bashkit.CommandContext) -> int:
        silent = list(ctx.argv) in (["-s"], ["--silent"], ["--quiet"])
        if not silent:
            await ctx.stdout.write(b"not a tty\n" if terminal is None else f"{PTY_NAME}\n".encode())
        return 1 if terminal is None else 0

    return tty
