"""GNU ``tar`` over the virtual filesystem (placeholder: being written)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import bashkit

__all__ = ["tar_command"]


def tar_command() -> Callable[[bashkit.CommandContext], Awaitable[int]]:
    async def tar(ctx: bashkit.CommandContext) -> int:
        await ctx.stderr.write(b"tar: not available yet\n")
        return 2

    return tar
