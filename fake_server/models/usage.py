"""Usage of an account's sandboxes over time, for ``GET /v1/metrics`` and
``/v1/metrics/timeseries``: when each sandbox was running, on the fake clock.

No public source shows the service's usage fields; these are the fake's own
(docs/fake-server.md, "Metrics"): running seconds, vCPU-seconds and MiB-seconds of memory
reserved by the sandbox's shape while it ran, and its bandwidth counters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fake_server.models.errors import BadRequest

if TYPE_CHECKING:
    from fake_server.models.bandwidth import Bandwidth

__all__ = [
    "MAX_POINTS",
    "MAX_WINDOW",
    "RunningSpans",
    "UsageRecord",
    "Window",
    "check_window",
]

#: The widest window ``/v1/metrics`` and ``/v1/metrics/timeseries`` accept: 31 days.
MAX_WINDOW = 31 * 86400.0
#: The most points one timeseries answers (``(to - from) / step``).
MAX_POINTS = 1440


class RunningSpans:
    """When one sandbox was ``running``: ``[start, end]`` pairs on the clock's ``now()``
    scale, the last one open (``end`` None) while it runs."""

    def __init__(self) -> None:
        self.spans: list[list[float | None]] = []

    def record(self, status: str, at: float) -> None:
        running = bool(self.spans) and self.spans[-1][1] is None
        if status == "running" and not running:
            self.spans.append([at, None])
        elif status != "running" and running:
            self.spans[-1][1] = at

    def seconds(self, start: float, end: float, now: float) -> float:
        """Running seconds inside ``[start, end]``."""
        total = 0.0
        for begin, finish in self.spans:
            assert begin is not None
            stop = now if finish is None else finish
            total += max(0.0, min(end, stop) - max(start, begin))
        return total


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One sandbox's share of its account's usage; kept after the sandbox is gone."""

    sandbox_id: str
    vcpu: int
    mem_mib: int
    running: RunningSpans
    bandwidth: Bandwidth = field(compare=False)


@dataclass(frozen=True, slots=True)
class Window:
    """A window in unix seconds of the fake clock."""

    start: float
    end: float


def check_window(start: float, end: float, *, widest: float = MAX_WINDOW) -> Window:
    """400 naming ``from`` for a reversed or too wide window."""
    if start >= end:
        raise BadRequest("must be before 'to'", field="from")
    if end - start > widest:
        raise BadRequest(f"window wider than {int(widest)} seconds", field="from")
    return Window(start, end)
