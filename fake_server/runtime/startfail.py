"""A command that could not be started: the exec result's ``error``, not a shell's message.

The service's agent starts ``cmd`` itself; when it cannot (no such program, not executable) the
exec answers with ``result.error`` set and nothing on stderr, which the TS SDK's ``sh()``
throws on and the CLI prints (TS ``ExecResult.error``: "Agent-level failure (the command could
not be started)"; the CLI's ``cmd/sandbox/exec.go``). The service's wording is not public: the
fake words it as Go's ``os/exec`` does, and keeps the shell's exit statuses (127 not found, 126
not executable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["CommandNotStarted", "HeldStart", "start_failure"]

#: ``strerror`` texts of a start failure and the exit status each keeps.
_STATUS = {
    "No such file or directory": 127,
    "Permission denied": 126,
    "Is a directory": 126,
    "Exec format error": 126,
}


class CommandNotStarted(Exception):
    """``program`` could not be started; ``error`` is the exec result's ``error``."""

    def __init__(self, exit_code: int, error: str) -> None:
        super().__init__(error)
        self.exit_code = exit_code
        self.error = error


def start_failure(program: str, reason: str, hint: str = "") -> CommandNotStarted:
    """The failure for ``program`` given the ``strerror`` the runtime saw (``reason``; any
    other than those above is 126, as the shell answers a program it cannot execute). ``hint``
    is appended (why the bashkit runtime lacks a program the host has)."""
    status = _STATUS.get(reason, 126)
    if "/" not in program and status == 127:
        text = f'exec: "{program}": executable file not found in $PATH'
    else:
        # execve() of a directory fails with EACCES, as Go reports it.
        errno_text = "permission denied" if reason == "Is a directory" else reason.lower()
        text = f"fork/exec {program}: {errno_text}"
    return CommandNotStarted(status, text + hint)


class HeldStart:
    """An stderr sink that holds back the start of stderr while it may still be the runtime's
    message that ``program`` could not start (bashkit's ``StartCheck``, the process runtime's
    nsenter check). ``_examine`` says, from what is held, whether to go on holding (``None``)
    or what to pass on; both runtimes hold and release the same way."""

    def __init__(self, program: str, sink: Callable[[bytes], Awaitable[None]]) -> None:
        self._program = program
        self._sink = sink
        #: Held bytes while they may still be the message; ``None`` once passed on.
        self._held: bytes | None = b""

    async def __call__(self, data: bytes) -> None:
        if self._held is None:
            await self._sink(data)
            return
        held = self._held + data
        rest = self._examine(held)
        if rest is None:
            self._held = held
            return
        self._held = None
        if rest:
            await self._sink(rest)

    def _examine(self, held: bytes) -> bytes | None:
        raise NotImplementedError

    def _take(self) -> bytes:
        """What is held (nothing once passed on); from now on everything passes."""
        held, self._held = self._held, None
        return held or b""

    async def flush(self) -> None:
        """Pass on what is held (the run failed another way)."""
        held = self._take()
        if held:
            await self._sink(held)
