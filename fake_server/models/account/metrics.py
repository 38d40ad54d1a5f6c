"""Metrics: a sandbox's CPU and memory now, an account's usage over a window.

The process runtime measures its sandboxes' processes (``/proc``); bashkit commands run inside
the fake's own process, so a bashkit sandbox reports a documented model instead:
``BASHKIT_BASE_MIB`` plus ``BASHKIT_PROCESS_MIB`` per live process, and no CPU time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.models.errors import BadRequest
from fake_server.models.transitions import ENDING
from fake_server.models.usage import MAX_POINTS, Window, check_window

if TYPE_CHECKING:
    from fake_server.models.account.table import SandboxTable

__all__ = [
    "BASHKIT_BASE_MIB",
    "BASHKIT_PROCESS_MIB",
    "Metrics",
    "SandboxMetrics",
    "UsagePoint",
]

#: The bashkit model: resident memory of an idle sandbox, and what each live process adds.
BASHKIT_BASE_MIB = 32
BASHKIT_PROCESS_MIB = 4
_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class SandboxMetrics:
    sandbox_id: str
    status: str
    at: float
    vcpu: int
    cpu_seconds: float
    memory_limit_bytes: int
    memory_used_bytes: int
    processes: int
    source: str


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """Usage inside ``[start, end)``: sandbox-seconds running, and what their shapes reserved."""

    start: float
    end: float
    running_seconds: float
    vcpu_seconds: float
    mem_mib_seconds: float
    sandboxes: int


class Metrics:
    """What the metrics routes read (``account.metrics``): a sandbox's now, the account's usage
    over a window. A service over the account's table."""

    def __init__(self, account: SandboxTable) -> None:
        self.account = account

    def sandbox_metrics(self, sandbox_id: str) -> SandboxMetrics:
        sandbox = self.account.sandbox(sandbox_id, read=True)
        live = sandbox.status not in ENDING
        measured = sandbox.machine.usage() if live else None
        limit = sandbox.shape.mem_mib * _MIB
        if measured is not None:
            cpu, used, count, source = (
                measured.cpu_seconds,
                measured.memory_bytes,
                measured.processes,
                "proc",
            )
        else:
            count = sum(p.state == "running" for p in sandbox.processes.values()) if live else 0
            used = (BASHKIT_BASE_MIB + BASHKIT_PROCESS_MIB * count) * _MIB if live else 0
            cpu, source = 0.0, "model"
        return SandboxMetrics(
            sandbox_id=sandbox.id,
            status=sandbox.status,
            at=self.account.ctx.clock.time(),
            vcpu=sandbox.shape.vcpu,
            cpu_seconds=round(cpu, 3),
            memory_limit_bytes=limit,
            memory_used_bytes=min(used, limit),
            processes=count,
            source=source,
        )

    def usage(self, window: Window) -> UsagePoint:
        """The account's usage over ``window`` (unix seconds of the fake clock)."""
        return self._point(window.start, window.end)

    def usage_series(self, window: Window, step: float) -> list[UsagePoint]:
        if not (math.isfinite(step) and step >= 1):
            raise BadRequest("must be at least 1 second", field="step")
        count = math.ceil((window.end - window.start) / step)
        if count > MAX_POINTS:
            raise BadRequest(f"gives more than {MAX_POINTS} points; widen it", field="step")
        starts = [window.start + i * step for i in range(count)]
        return [self._point(start, min(start + step, window.end)) for start in starts]

    def _point(self, start: float, end: float) -> UsagePoint:
        clock = self.account.ctx.clock
        now = clock.now()
        offset = clock.time() - now  # unix seconds -> the clock's now() scale
        running = vcpu = mem = 0.0
        sandboxes = 0
        for record in self.account.usage_records:
            seconds = record.running.seconds(start - offset, end - offset, now)
            if seconds > 0:
                sandboxes += 1
                running += seconds
                vcpu += seconds * record.vcpu
                mem += seconds * record.mem_mib
        return UsagePoint(start, end, round(running, 3), round(vcpu, 3), round(mem, 3), sandboxes)


def window(start: float | None, end: float | None, now: float) -> Window:
    """The window a request asks for: ``to`` defaults to now, ``from`` to an hour before."""
    stop = now if end is None else end
    return check_window(stop - 3600 if start is None else start, stop)
