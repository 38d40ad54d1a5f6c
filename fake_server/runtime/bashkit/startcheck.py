"""bashkit's message for a command it could not start, turned into the exec's ``error``.

bashkit runs an exec's argv as a line of bash, so a program that is missing or not executable
comes back as bash's ``bash: line 1: NAME: command not found`` (127) or ``…: Permission
denied`` (126) on stderr. The service starts the program itself and reports that as
``result.error`` with nothing on stderr (``fake_server.runtime.startfail``). ``StartCheck``
holds stderr back while it may still be that one line, and raises ``CommandNotStarted`` when
it was all the command wrote; anything else goes through unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.runtime.startfail import HeldStart, start_failure

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["StartCheck"]

#: The reasons bash gives, as ``strerror`` texts (``command not found``: not on ``PATH``).
_REASONS = {
    b"command not found": "No such file or directory",
    b"No such file or directory": "No such file or directory",
    b"Permission denied": "Permission denied",
    b"Is a directory": "Is a directory",
}


class StartCheck(HeldStart):
    """An stderr sink for one exec of ``program`` (``name``: how bashkit names it)."""

    def __init__(self, name: str, program: str, sink: Callable[[bytes], Awaitable[None]]) -> None:
        super().__init__(program, sink)
        self._prefix = f"bash: line 1: {name}: ".encode()

    def _examine(self, held: bytes) -> bytes | None:
        end = held.find(b"\n")
        maybe = self._prefix.startswith(held) or (
            held.startswith(self._prefix) and end in (-1, len(held) - 1)
        )
        return None if maybe else held

    async def settle(self, code: int) -> None:
        """Raise ``CommandNotStarted`` if the held line was all the command wrote and its
        status says it did not start; else pass on what is held."""
        held = self._take()
        if held and code in (126, 127) and held.startswith(self._prefix) and held.endswith(b"\n"):
            rest = held[len(self._prefix) : -1]
            for said, reason in _REASONS.items():
                if rest.startswith(said):
                    hint = rest[len(said) :].decode(errors="replace")
                    raise start_failure(self._program, reason, hint)
        if held:
            await self._sink(held)
