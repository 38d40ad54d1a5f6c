"""CPU and memory of a sandbox's processes, read from ``/proc`` (``GET …/metrics``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fake_server.runtime.api import Usage
from fake_server.runtime.process.sandbox import tree

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["tree_usage"]

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _one(pid: int) -> tuple[float, int] | None:
    """CPU seconds (user + system) and resident bytes of ``pid``; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        with open(f"/proc/{pid}/statm", "rb") as handle:
            statm = handle.read().split()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    # Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the name.
    ticks = int(fields[11]) + int(fields[12])
    return ticks / _TICKS, int(statm[1]) * _PAGE


def tree_usage(roots: Iterable[int]) -> Usage:
    """The sum over every process of each run (bwrap, the sandbox's init, the command and
    everything below it): CPU seconds so far, resident memory now, how many."""
    cpu = 0.0
    memory = 0
    count = 0
    for root in roots:
        for pid in [root, *(p for level in tree.descendants(root) for p in level)]:
            measured = _one(pid)
            if measured is not None:
                cpu += measured[0]
                memory += measured[1]
                count += 1
    return Usage(cpu_seconds=cpu, memory_bytes=memory, processes=count)
