"""A sandbox: its settings, status machine, disk and processes.

Transitions are settled lazily: each request first asks the sandbox to ``settle()``, which
completes every transition whose step (fake seconds and reads) has passed and journals it
stamped with its scheduled time.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.models.bandwidth import Bandwidth
from fake_server.models.errors import Conflict
from fake_server.models.journal.events import Event
from fake_server.models.transitions import ENDING, STATUSES, TARGET
from fake_server.models.usage import RunningSpans

if TYPE_CHECKING:
    from fake_server.models.catalog import Shape
    from fake_server.models.context import Context
    from fake_server.models.process import Process
    from fake_server.models.transitions import Step
    from fake_server.runtime.api import Machine

__all__ = ["STATUSES", "AccessToken", "Sandbox", "SandboxSpec"]

#: Float slack, so advancing by 2.9 then 0.1 completes a 3 s step.
_EPSILON = 1e-9


@dataclass(slots=True)
class AccessToken:
    token: str
    created_at: float
    rotated_at: float | None = None

    @property
    def hint(self) -> str:
        """Enough to tell tokens apart, never enough to use one."""
        return self.token[:4] + "…" + self.token[-4:]


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

    #: Execs in flight: activity, as a live process is, so auto-pause waits for them (a class
    #: default, so a sandbox restored by ``persist`` starts with none).
    execs: int = 0

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
        forked_from: str | None = None,
        start_paused: bool = False,
        egress: list[str] | None = None,
    ) -> None:
        """``egress``: the rules (default: the spec's); a runtime that cannot honour them
        raises ``Conflict`` here, before the sandbox is recorded anywhere."""
        self.id = sandbox_id
        self.account_id = account_id
        self.spec = spec
        self.shape = shape
        self.name = name
        self.ip = ip
        self.spawn_ms = spawn_ms
        #: The runtime's side of this sandbox: files, processes, pause, destroy.
        self.machine = machine
        machine.set_address(ip)
        machine.set_shape(shape.vcpu, shape.mem_mib, shape.cpu_quota_pct)
        machine.set_agent(self._self_signal)
        self.disk = machine.disk
        self.ctx = ctx
        self.clock = ctx.clock
        self.envs: dict[str, str] = dict(spec.envs)
        # Settings a client may change after create (PATCH, egress, ssh-pubkeys, resize).
        extras = spec.extras
        self.ingress_enabled = spec.ingress_enabled
        self._egress: list[str] = []
        self.egress = list(extras.get("egress") or []) if egress is None else egress
        self.ssh_pubkeys: list[str] = list(extras.get("ssh_pubkeys") or [])
        self.auto_pause_after_seconds: int | None = extras.get("auto_pause_after_seconds") or None
        self._disk_mib = 0
        self.disk_mib = extras.get("disk_mib") or shape.default_disk_mib
        self.forked_from = forked_from
        #: Where ``forking`` ends: ``paused`` for a fork asked to ``start_paused``.
        self._fork_target = "paused" if start_paused else "running"
        #: The delegated credential for this sandbox (``…/access-token``), if any.
        self.access_token: AccessToken | None = None
        self.bandwidth = Bandwidth()
        #: Fake-clock time of the last API activity, for auto-pause.
        self.last_activity = self.clock.now()
        self.created_at = self.clock.time()
        self.running_at: float | None = None
        self.paused_at: float | None = None
        self.last_resumed_at: float | None = None
        self.destroyed_at: float | None = None
        self.destroyed_mono: float | None = None
        self.processes: dict[str, Process] = {}
        #: When it was running, for the account's usage metrics (``models.usage``).
        self.running = RunningSpans()
        self.status = "forking" if forked_from else "creating"
        self._pending: _Pending | None = _Pending(self.status, self.clock.now())
        self._timer: asyncio.Task[None] | None = None
        self._record("", self.status, self.clock.now())
        self._schedule()

    @property
    def egress(self) -> list[str]:
        """Egress rules; the runtime is told each new list (the process runtime enforces it)."""
        return self._egress

    @egress.setter
    def egress(self, rules: list[str]) -> None:
        from fake_server.runtime.api import FeatureUnavailable

        try:
            self.machine.set_egress(list(rules), lambda: self.bandwidth)
        except FeatureUnavailable as exc:  # the rules stay as they were
            raise Conflict(str(exc), code="runtime_unsupported") from None
        self._egress = list(rules)

    @property
    def disk_mib(self) -> int:
        """The disk size; the runtime is told each new one (the process runtime's ENOSPC)."""
        return self._disk_mib

    @disk_mib.setter
    def disk_mib(self, size: int) -> None:
        from fake_server.runtime.api import FeatureUnavailable

        try:
            self.machine.set_disk_size(size)
        except FeatureUnavailable as exc:  # the disk stays as it was
            raise Conflict(str(exc), code="runtime_unsupported") from None
        self._disk_mib = size

    # -- the state machine --------------------------------------------------------------------

    def settle(self, *, read: bool = False) -> str:
        """Complete a due transition; a ``read`` counts as one GET that saw the status."""
        self._auto_pause()
        pending = self._pending
        if pending is not None and pending.status == self.status:
            step = self._step(pending.status)
            due = pending.started + step.seconds
            if self.clock.now() >= due - _EPSILON and pending.reads >= step.reads:
                target = self._fork_target if pending.status == "forking" else TARGET[self.status]
                self._complete(target, max(due, pending.started))
            elif read:
                pending.reads += 1
        elif pending is not None:
            self._pending = None
        return self.status

    def _step(self, status: str) -> Step:
        """A fork boots a VM like a create, so ``forking`` takes the creating step."""
        return self.ctx.policy.step("creating" if status == "forking" else status)

    def touch(self) -> None:
        """The sandbox's agent was used (exec, files, processes): idle time restarts."""
        self.last_activity = self.clock.now()

    def _auto_pause(self) -> None:
        """Pause a running sandbox idle for ``auto_pause_after_seconds`` of fake time, stamped
        when it became due; a live process or an exec in flight counts as activity."""
        after = self.auto_pause_after_seconds
        if after is None or self.status != "running" or self._pending is not None:
            return
        if self.execs or any(not p.tree_exited for p in self.processes.values()):
            self.touch()
            return
        due = self.last_activity + after
        if self.clock.now() >= due - _EPSILON:
            # "identically to calling pause()" (TS docs/explanation/lifecycle.md): the machine
            # pauses too (the process runtime stops every process, an in-flight exec with them).
            self.machine.pause()
            self._record(self.status, "pausing", due)
            self.status = "pausing"
            self._pending = _Pending("pausing", due)
            self._schedule()

    async def _idle_watch(self) -> None:
        """Wake when the sandbox becomes due for auto-pause and pause it then, not at the next
        read; activity meanwhile (``touch``) moves the moment on."""
        me = asyncio.current_task()
        while self.status == "running" and self._pending is None:
            after = self.auto_pause_after_seconds
            if after is None:
                return
            remaining = self.last_activity + after - self.clock.now()
            if remaining > _EPSILON:
                await self._sleep_passively(remaining)
                continue
            self._timer = None  # settling may schedule the pause's own timer
            self.settle()
            if self._timer is not None or self.status != "running":
                return
            self._timer = me  # a live process counted as activity: watch on

    def _complete(self, target: str, at: float) -> None:
        self._pending = None
        wall = self.clock.time() - (self.clock.now() - at)
        if target == "running":
            self.last_activity = max(self.last_activity, at)
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
        if target == "running":
            self.watch_idle(restart=True)

    def _begin(self, status: str) -> None:
        self._record(self.status, status, self.clock.now())
        self.status = status
        self._pending = _Pending(status, self.clock.now())
        self._schedule()

    def _schedule(self) -> None:
        """Put the completion time on the clock, so a virtual clock can jump to it even when
        the only client polls on wall time (the official SDK, curl); a running sandbox with
        auto-pause gets its idle watch instead."""
        self.cancel_timer()
        pending = self._pending
        if pending is None:
            self.watch_idle()
            return
        seconds = max(0.0, pending.started + self._step(pending.status).seconds - self.clock.now())
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # used outside the server (unit tests): settling stays lazy
            return
        if seconds > 0 or self.auto_pause_after_seconds is not None:  # then the idle watch
            self._timer = loop.create_task(self._settle_after(seconds))

    async def _sleep_passively(self, seconds: float) -> None:
        """A virtual clock never jumps to an auto-pause for it alone: a client between two
        requests (one not reporting to the clock) would find its sandbox paused at once."""
        from fake_server.clock import VirtualClock

        if isinstance(self.clock, VirtualClock):
            await self.clock.sleep(seconds, passive=True)
        else:
            await self.clock.sleep(seconds)

    def watch_idle(self, *, restart: bool = False) -> None:
        """Start the idle watch of a running sandbox with auto-pause (after create, resume, a
        PATCH setting it); a no-op otherwise or when one is already watching. ``restart``: the
        transition to ``running`` just completed, so the timer left is its own (stale)."""
        if self.status != "running" or self._pending is not None:
            return
        if self.auto_pause_after_seconds is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # outside the server (unit tests): auto-pause stays lazy
            return
        timer = self._timer
        if timer is not None and not timer.done() and timer is not asyncio.current_task():
            if not restart:
                return  # watching already
            timer.cancel()
        self._timer = loop.create_task(self._idle_watch())

    async def _settle_after(self, seconds: float) -> None:
        await self.clock.sleep(seconds)
        self.settle()

    async def until_created(self) -> None:
        """Block while ``creating`` for the creating step's fake seconds, as the service's
        synchronous ``POST /v1/sandboxes`` does; a step counted in reads answers at once (the
        ``creating`` reply of older deployments), and so does a status changed meanwhile."""
        pending = self._pending
        step = self.ctx.policy.step("creating")
        if pending is None or pending.status != "creating" or step.reads:
            return
        remaining = pending.started + step.seconds - self.clock.now()
        if remaining > 0:
            await self.clock.sleep(remaining)
        self.settle()

    def cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and not timer.done():
            timer.cancel()

    def _record(self, old: str, new: str, at: float) -> None:
        self.running.record(new, at)
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
        if self.status in ENDING:
            return
        for process in self.processes.values():
            process.crash("SIGKILL")
        self.machine.destroy()
        self._begin("destroying")

    def _self_signal(self, action: str, reason: str) -> None:
        """The in-guest agent's ``/self/pause`` or ``/self/delete`` (already answered 202):
        journaled as such (the reason in the event's ``body``), then done as the API does."""
        self.ctx.journal.record(
            Event(
                time=self.clock.now(),
                kind="agent",
                operation=f"self_{action}",
                account_id=self.account_id,
                sandbox_id=self.id,
                body=reason or None,
            )
        )
        self.settle()
        if action == "delete":
            self.destroy()
        elif self.status == "running":
            self.pause()

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
        self._pending = _Pending(status, self.clock.now()) if status in TARGET else None
        self._schedule()
