"""Per-run bookkeeping shared by the shell and its custom commands.

bashkit runs an async custom command in a task of its own, not in the task that awaits
``Bash.execute()``. A busy token held by the awaiting task would therefore stop a virtual clock
from ever jumping while ``sleep`` waits. ``RunState`` owns that token explicitly and hands it
back whenever a custom command waits (sleep, stdin, a registered command), whatever task it is
in.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from fake_server.clock import Clock
    from fake_server.runtime.disk import SandboxDisk

__all__ = ["RunState"]


class RunState:
    """Busy accounting and signal disposition of one ``Shell.run()``."""

    def __init__(self, clock: Clock, disk: SandboxDisk) -> None:
        self.clock = clock
        self.disk = disk
        self._token: contextlib.AbstractContextManager[None] | None = None
        self._waiting = 0
        self._active = False
        self._ignoring_sigterm = 0

    def start(self) -> None:
        """The interpreter starts working: time must not jump until it waits."""
        self._active = True
        self._acquire()

    def stop(self) -> None:
        self._active = False
        self._release()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """The interpreter is blocked in a custom command; time may jump meanwhile."""
        self._waiting += 1
        self._release()
        try:
            yield
        finally:
            self._waiting -= 1
            if self._waiting == 0 and self._active:
                self._acquire()

    @contextlib.contextmanager
    def ignoring_sigterm(self, ignores: bool) -> Iterator[None]:
        """While a command that ignores SIGTERM runs, the process survives SIGTERM."""
        self._ignoring_sigterm += int(ignores)
        try:
            yield
        finally:
            self._ignoring_sigterm -= int(ignores)

    @property
    def ignores_sigterm(self) -> bool:
        return self._ignoring_sigterm > 0

    def _acquire(self) -> None:
        if self._token is None:
            token = self.clock.busy()
            token.__enter__()
            self._token = token

    def _release(self) -> None:
        token, self._token = self._token, None
        if token is not None:
            token.__exit__(None, None, None)
