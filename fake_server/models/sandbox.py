"""A sandbox: its settings, status machine, disk and processes.

Transitions are settled lazily: each request first asks the sandbox to ``settle()``, which
completes every transition whose step (fake seconds and reads) has passed and journals it
stamped with its scheduled time.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.models.errors import Conflict
from fake_server.models.journal import Event

if TYPE_CHECKING:
    from fake_server.models.catalog import Shape
    from fake_server.models.context import Context
    from fake_server.models.process import Process
    from fake_server.runtime.api import Machine

__all__ = ["STATUSES", "Sandbox", "SandboxSpec"]

STATUSES = (
    "creating",
    "running",
    "pausing",
    "paused",
    "resuming",
    "forking",
    "error",
    "destroying",
    "destroyed",
    "failed",
)
#: Float slack, so advancing by 2.9 then 0.1 completes a 3 s step.
_EPSILON = 1e-9
_TARGET = {
    "creating": "running",
    "pausing": "paused",
    "resuming": "running",
    "destroying": "destroyed",
}


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """Validated create-request fields."""

    shape: str
    rootfs: str
    region: str
    name: str | None = None
    ingress_enabled: bool = False
    envs: tuple[tuple[str, str], ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Pending:
    status: str
    started: float
    reads: int = 0


class Sandbox:
    """One sandbox. ``status`` is settled; use ``force_status`` for out-of-band changes."""

    def __init__(
        self,
        *,
        sandbox_id: str,
        account_id: str,
        spec: SandboxSpec,
        shape: Shape,
        name: str,
        ip: str,
        spawn_ms: float,
        machine: Machine,
        ctx: Context,
    ) -> None:
        self.id = sandbox_id
        self.account_id = account_id
        self.spec = spec
        self.shape = shape
        self.name = name
        self.ip = ip
        self.spawn_ms = spawn_ms
        #: The runtime's side of this sandbox: files, processes, pause, destroy.
        self.machine = machine
        self.disk = machine.disk
        self.ctx = ctx
        self.clock = ctx.clock
        self.envs: dict[str, str] = dict(spec.envs)
        self.created_at = self.clock.time()
        self.running_at: float | None = None
        self.paused_at: float | None = None
        self.last_resumed_at: float | None = None
        self.destroyed_at: float | None = None
        self.destroyed_mono: float | None = None
        self.processes: dict[str, Process] = {}
        self.status = "creating"
        self._pending: _Pending | None = _Pending("creating", self.clock.now())
        self._timer: asyncio.Task[None] | None = None
        self._record("", "creating", self.clock.now())
        self._schedule()

    # -- the state machine --------------------------------------------------------------------

    def settle(self, *, read: bool = False) -> str:
        """Complete a due transition; a ``read`` counts as one GET that saw the status."""
        pending = self._pending
        if pending is not None and pending.status == self.status:
            step = self.ctx.policy.step(pending.status)
            due = pending.started + step.seconds
            if self.clock.now() >= due - _EPSILON and pending.reads >= step.reads:
                self._complete(_TARGET[pending.status], max(due, pending.started))
            elif read:
                pending.reads += 1
        elif pending is not None:
            self._pending = None
        return self.status

    def _complete(self, target: str, at: float) -> None:
        self._pending = None
        wall = self.clock.time() - (self.clock.now() - at)
        if target == "running":
            self.running_at = self.running_at or wall
            if self.status == "resuming":
                self.last_resumed_at = wall
        elif target == "paused":
            self.paused_at = wall
        elif target == "destroyed":
            self.destroyed_at = wall
            self.destroyed_mono = at
        self._record(self.status, target, at)
        self.status = target

    def _begin(self, status: str) -> None:
        self._record(self.status, status, self.clock.now())
        self.status = status
        self._pending = _Pending(status, self.clock.now())
        self._schedule()

    def _schedule(self) -> None:
        """Put the completion time on the clock, so a virtual clock can jump to it even when
        the only client polls on wall time (the official SDK, curl)."""
        self.cancel_timer()
        pending = self._pending
        if pending is None:
            return
        seconds = self.ctx.policy.step(pending.status).seconds
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # used outside the server (unit tests): settling stays lazy
            return
        if seconds > 0:
            self._timer = loop.create_task(self._settle_after(seconds))

    async def _settle_after(self, seconds: float) -> None:
        await self.clock.sleep(seconds)
        self.settle()

    def cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and not timer.done():
            timer.cancel()

    def _record(self, old: str, new: str, at: float) -> None:
        self.ctx.journal.record(
            Event(
                time=at,
                kind="transition",
                account_id=self.account_id,
                sandbox_id=self.id,
                detail=f"{old or '-'} -> {new}",
            )
        )

    def gone(self) -> bool:
        """A destroyed sandbox is visible for a while, then answers 404."""
        return (
            self.status == "destroyed"
            and self.destroyed_mono is not None
            and self.clock.now() - self.destroyed_mono >= self.ctx.policy.destroyed_visible_for
        )

    def pause(self) -> bool:
        """Start pausing; False when already paused (HTTP 200 instead of 202)."""
        if self.status == "paused":
            return False
        if self.status != "running":
            raise Conflict("sandbox is not running", code="invalid_state")
        self.machine.pause()
        self._begin("pausing")
        return True

    def resume(self) -> bool:
        """Start resuming; False when already running."""
        if self.status == "running":
            return False
        if self.status not in ("paused", "error"):
            raise Conflict("sandbox must be paused or error to resume", code="invalid_state")
        self.machine.resume()
        self._begin("resuming")
        return True

    def destroy(self) -> None:
        """Start destroying: every process dies and the disk is wiped at once."""
        if self.status in ("destroying", "destroyed"):
            return
        for process in self.processes.values():
            process.crash("SIGKILL")
        self.machine.destroy()
        self._begin("destroying")

    def require_running(self) -> None:
        if self.status != "running":
            raise Conflict(f"sandbox is {self.status}, not running", code="not_running")

    def force_status(self, status: str) -> None:
        """Set a status out of band (fault hook); no transition follows unless it is one."""
        if status not in STATUSES:
            raise ValueError(f"unknown sandbox status {status!r}; expected one of {STATUSES}")
        if status == "destroyed" and self.status != "destroyed":
            for process in self.processes.values():
                process.crash("SIGKILL")
            self.destroyed_at = self.clock.time()
            self.destroyed_mono = self.clock.now()
        self._record(self.status, status, self.clock.now())
        self.status = status
        self._pending = _Pending(status, self.clock.now()) if status in _TARGET else None
        self._schedule()
