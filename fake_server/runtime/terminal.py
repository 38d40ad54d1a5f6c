"""A PTY's window, shared by the process model (which the resize API changes) and the runtime.

The model creates one ``Terminal`` per PTY process and passes it to ``Runner.run``; the
runtime reads ``size`` when the program asks (bashkit's ``stty size``) or listens for changes
(the process runtime sets the real PTY's window, and the kernel sends ``SIGWINCH``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Terminal"]


class Terminal:
    """Rows and columns of one PTY, and who wants to hear when they change."""

    def __init__(self, rows: int, cols: int) -> None:
        self.size = (rows, cols)
        self._listeners: list[Callable[[int, int], None]] = []

    def resize(self, rows: int, cols: int) -> None:
        self.size = (rows, cols)
        for listener in list(self._listeners):
            listener(rows, cols)

    def listen(self, listener: Callable[[int, int], None]) -> Callable[[], None]:
        """Call ``listener(rows, cols)`` on every resize; returns the function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None
