"""What out-of-band changes act on: the ``OutOfBandTarget`` protocol and its two errors.

Kept apart from the actions and the registry so both can name it without importing each other;
the fake's implementation over its ``World`` is ``faults.world.WorldTarget``.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["OutOfBandTarget", "TargetError", "UnknownTargetError"]


class UnknownTargetError(LookupError):
    """The sandbox or process an out-of-band change names does not exist (any more)."""


class TargetError(ValueError):
    """The target exists but cannot take the change (e.g. a file path that is a directory).

    ``field`` names the part of the action at fault, for the control API's 400.
    """

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class OutOfBandTarget(Protocol):
    """What out-of-band changes need from the fake's world (implemented by the fake).

    Each method raises ``UnknownTargetError`` when the sandbox or process does not exist and
    ``TargetError`` when it cannot take the change.
    """

    def set_status(self, sandbox_id: str, status: str) -> None: ...
    def forget(self, sandbox_id: str) -> None: ...
    def write_file(self, sandbox_id: str, path: str, data: bytes) -> None: ...
    def evict_output(self, sandbox_id: str, process_id: str, up_to_seq: int | None) -> None: ...
    def crash_process(self, sandbox_id: str, process_id: str, signal: str) -> None: ...
