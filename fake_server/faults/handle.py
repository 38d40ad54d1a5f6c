"""``fake.faults``, the handle a test holds: the rule registry plus out-of-band changes
callable directly from a test.

Out-of-band changes (a sandbox fails, disappears, a file is tampered with, a process's output is
evicted or it crashes, a network vanishes, a disk is detached, a template build fails, the
credit runs out) apply themselves to the fake's ``World``, which the fake passes in with its
loop when it builds the registry: each runs there (``loopcall.call_on_loop``), so it has
happened when the call returns, from the test's thread too. They are available two ways: as
fault actions that fire at the moment of a matching call, and as direct methods here
(``fake.faults.set_status(sid, "failed")``) for a test that wants the change now, without any
request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.faults.actions import (
    CrashProcess,
    EvictOutput,
    Forget,
    OutOfBandAction,
    SetStatus,
    TamperFile,
)
from fake_server.faults.aim import (
    Aim,
    TargetConflictError,
    TargetError,
    UnknownTargetError,
)
from fake_server.faults.registry import FaultRegistry
from fake_server.faults.resource_actions import (
    DetachDisk,
    ExhaustCredit,
    FailTemplateBuild,
    VanishNetwork,
)
from fake_server.loopcall import call_on_loop

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from fake_server.clock import Clock
    from fake_server.faults.registry import Plan
    from fake_server.models import World

__all__ = ["Faults", "TargetError", "UnknownTargetError"]

#: The errors an action raises for a change the world cannot take.
_REFUSED = (UnknownTargetError, TargetError, TargetConflictError)


class Faults(FaultRegistry):
    """The registry (``add``, ``fired``, ``unfired()``, ``clear()``) plus direct changes."""

    def __init__(
        self,
        *,
        seed: int = 0,
        clock: Clock | None = None,
        world: World | None = None,
        loop: Callable[[], asyncio.AbstractEventLoop | None] = lambda: None,
    ) -> None:
        super().__init__(seed=seed, clock=clock)
        self._world = world
        self._loop = loop
        #: Called with each change applied now (not through a fault); the journal subscribes.
        self.applied_listeners: list[Callable[[OutOfBandAction, Aim], None]] = []

    # -- direct out-of-band changes -----------------------------------------------------------

    def apply_now(
        self,
        action: OutOfBandAction,
        sandbox_id: str | None = None,
        process_id: str | None = None,
        *,
        account: str | None = None,
    ) -> None:
        """Apply ``action`` now, without any request, to the ids it names or these.

        ``account`` refuses a resource of another account (``TargetConflictError``).
        """
        known = Aim(sandbox_id=sandbox_id, process_id=process_id, account=account)
        aim = action.aim(known)
        if aim is None:
            missing = [n for n in action.needs if not getattr(action, n, None)]
            missing = [n for n in missing if not getattr(known, n)]
            raise ValueError(f"{type(action).__name__} needs " + " and ".join(missing))
        self._apply(action, aim)
        for listener in list(self.applied_listeners):
            listener(action, aim)

    def set_status(self, sandbox_id: str, status: str) -> None:
        """Force a sandbox into ``status`` now (e.g. ``error``, ``failed``, ``destroyed``)."""
        self.apply_now(SetStatus(status), sandbox_id)

    def forget(self, sandbox_id: str) -> None:
        """Make a sandbox disappear now: every later request for it gets 404."""
        self.apply_now(Forget(), sandbox_id)

    def tamper_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        """Overwrite a file in a sandbox now (e.g. the lease marker), creating parents."""
        self.apply_now(TamperFile(path, bytes(data)), sandbox_id)

    def evict_output(self, sandbox_id: str, process_id: str, up_to_seq: int | None = None) -> None:
        """Evict a process's retained output up to ``up_to_seq`` (everything if None)."""
        self.apply_now(EvictOutput(up_to_seq), sandbox_id, process_id)

    def crash_process(self, sandbox_id: str, process_id: str, signal: str = "SIGKILL") -> None:
        """Kill a process's tree now with ``signal``; its exit frame reports the signal."""
        self.apply_now(CrashProcess(signal=signal), sandbox_id, process_id)

    def vanish_network(self, network_id: str) -> None:
        """Make a network disappear now: members detached, later requests for it get 404."""
        self.apply_now(VanishNetwork(network_id))

    def detach_disk(
        self, disk_id: str, sandbox_id: str | None = None, mount_path: str | None = None
    ) -> None:
        """Unmount a disk now from one sandbox (every sandbox when None); its data is kept."""
        self.apply_now(DetachDisk(disk_id, sandbox_id, mount_path))

    def fail_template_build(self, template_id: str, reason: str = "injected build failure") -> None:
        """End a pending or building template's build ``failed`` now, ``reason`` in its log."""
        self.apply_now(FailTemplateBuild(template_id, reason))

    def exhaust_credit(self, account: str | None = None) -> None:
        """Run an account (its ``user_id``; every account when None) out of credit now."""
        self.apply_now(ExhaustCredit(), account=account)

    # -- applying a plan ----------------------------------------------------------------------

    def apply_out_of_band(self, plan: Plan) -> None:
        """Apply a request's out-of-band changes; a vanished target is skipped, not an error,
        and so is one that cannot take the change (a tampered path that is a directory, a
        resource of another account, a build that already ended).

        The request then runs against the changed world, and for an unknown id the handler
        answers 404 as usual.
        """
        if self._world is None:
            return
        for action, aim in plan.out_of_band:
            try:
                self._apply(action, aim)
            except _REFUSED:
                continue

    def _apply(self, action: OutOfBandAction, aim: Aim) -> None:
        world = self._world
        if world is None:
            raise RuntimeError("out-of-band changes need a started fake")
        call_on_loop(self._loop(), lambda: action.apply(world, aim))
