"""``fake.faults``: the rule registry plus out-of-band changes callable directly from a test.

Out-of-band changes (a sandbox fails, disappears, a file is tampered with, a process's output is
evicted or it crashes) need the fake's world; the fake binds an ``OutOfBandTarget`` adapter at
start. They are available two ways: as fault actions that fire at the moment of a matching
call, and as direct methods here (``fake.faults.set_status(sid, "failed")``) for a test that
wants the change now, without any request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from fake_server.faults.actions import (
    SANDBOX_STATUSES,
    CrashProcess,
    EvictOutput,
    Forget,
    OutOfBandAction,
    SetStatus,
    TamperFile,
)
from fake_server.faults.rules import FaultRegistry

if TYPE_CHECKING:
    from fake_server.clock import Clock
    from fake_server.faults.rules import Plan

__all__ = ["Faults", "OutOfBandTarget", "UnknownTargetError"]


class UnknownTargetError(LookupError):
    """The sandbox or process an out-of-band change names does not exist (any more)."""


class OutOfBandTarget(Protocol):
    """What out-of-band changes need from the fake's world (implemented by the fake).

    Each method raises ``UnknownTargetError`` when the sandbox or process does not exist.
    """

    def set_status(self, sandbox_id: str, status: str) -> None: ...
    def forget(self, sandbox_id: str) -> None: ...
    def write_file(self, sandbox_id: str, path: str, data: bytes) -> None: ...
    def evict_output(self, sandbox_id: str, process_id: str, up_to_seq: int | None) -> None: ...
    def crash_process(self, sandbox_id: str, process_id: str, signal: str) -> None: ...


class Faults(FaultRegistry):
    """The registry (``add``, ``fired``, ``unfired()``, ``clear()``) plus direct changes."""

    def __init__(
        self,
        *,
        seed: int = 0,
        clock: Clock | None = None,
        target: OutOfBandTarget | None = None,
    ) -> None:
        super().__init__(seed=seed, clock=clock)
        self._target = target

    def bind(self, target: OutOfBandTarget | None) -> None:
        """Attach the world the out-of-band changes act on (the fake does this)."""
        self._target = target

    # -- direct out-of-band changes -----------------------------------------------------------

    def set_status(self, sandbox_id: str, status: str) -> None:
        """Force a sandbox into ``status`` now (e.g. ``error``, ``failed``, ``destroyed``)."""
        if status not in SANDBOX_STATUSES:
            raise ValueError("status must be one of: " + ", ".join(sorted(SANDBOX_STATUSES)))
        self._world().set_status(sandbox_id, status)

    def forget(self, sandbox_id: str) -> None:
        """Make a sandbox disappear now: every later request for it gets 404."""
        self._world().forget(sandbox_id)

    def tamper_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        """Overwrite a file in a sandbox now (e.g. the lease marker), creating parents."""
        if not path.startswith("/"):
            raise ValueError("path must be absolute")
        self._world().write_file(sandbox_id, path, bytes(data))

    def evict_output(self, sandbox_id: str, process_id: str, up_to_seq: int | None = None) -> None:
        """Evict a process's retained output up to ``up_to_seq`` (everything if None)."""
        self._world().evict_output(sandbox_id, process_id, up_to_seq)

    def crash_process(self, sandbox_id: str, process_id: str, signal: str = "SIGKILL") -> None:
        """Kill a process's tree now with ``signal``; its exit frame reports the signal."""
        CrashProcess(signal=signal)  # validates the name
        self._world().crash_process(sandbox_id, process_id, signal)

    # -- applying a plan ----------------------------------------------------------------------

    def apply_out_of_band(self, plan: Plan) -> None:
        """Apply a request's out-of-band changes; a vanished target is skipped, not an error.

        The request then runs against the changed world, and for an unknown id the handler
        answers 404 as usual.
        """
        if self._target is None:
            return
        for action, sandbox_id, process_id in plan.out_of_band:
            try:
                _apply(self._target, action, sandbox_id, process_id)
            except UnknownTargetError:
                continue

    def _world(self) -> OutOfBandTarget:
        if self._target is None:
            raise RuntimeError("out-of-band changes need a started fake")
        return self._target


def _apply(
    target: OutOfBandTarget, action: OutOfBandAction, sandbox_id: str, process_id: str | None
) -> None:
    if isinstance(action, SetStatus):
        target.set_status(sandbox_id, action.status)
    elif isinstance(action, Forget):
        target.forget(sandbox_id)
    elif isinstance(action, TamperFile):
        target.write_file(sandbox_id, action.path, action.data)
    elif isinstance(action, EvictOutput) and process_id is not None:
        target.evict_output(sandbox_id, process_id, action.up_to_seq)
    elif isinstance(action, CrashProcess) and process_id is not None:
        target.crash_process(sandbox_id, process_id, action.signal)
