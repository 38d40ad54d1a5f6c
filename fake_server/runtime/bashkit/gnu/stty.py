"""``stty`` for bashkit sandboxes: the PTY's window size, or GNU's error without a terminal.

bashkit has no terminal devices. In a PTY process ``stty size`` prints the window the create
request and the resize API gave (``rows cols``), and the settings programs change in passing
(``stty -echo``, ``stty raw``, ``stty sane``) are accepted without effect. Without a PTY, stdin
is not a terminal, and ``stty`` fails as GNU's does there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import bashkit

    from fake_server.runtime.bashkit.adapters import CommandCallback
    from fake_server.runtime.terminal import Terminal

__all__ = ["stty_command"]

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
