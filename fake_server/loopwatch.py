"""Which event loops are parked in ``select()``: the ``VirtualClock``'s view of "idle".

A loop that waits in ``select()`` with nothing ready cannot be about to do anything; a loop
between two callbacks can. The probe rides on the selector of an asyncio selector loop.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import TYPE_CHECKING, Any

from fake_server.threadwatch import ThreadProbe

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

__all__ = ["LoopProbe"]


class LoopProbe:
    """Tells whether one event loop is parked in ``select()``: the loop's own idea of "idle".

    It rides on the selector of an asyncio selector loop (a private attribute); other loops get
    a probe that always reads as parked, leaving the decision to the other signals.
    """

    __slots__ = ("_selector", "parked", "since")

    def __init__(self, *, watched: bool, selector: _ProbedSelector | None = None) -> None:
        self.parked = not watched
        self.since = time.perf_counter()
        self._selector = selector

    def waiting(self) -> bool:
        """Parked in ``select()`` with nothing ready: no connection queued, no data unread.

        ``parked`` alone is set before the loop's thread enters ``select()`` and cleared after
        it returns; a busy machine may leave that thread unscheduled for a while after its
        socket became ready (a client's connection accepted by the kernel), so readiness is
        asked of the selector too, without waiting and without consuming anything.
        """
        if not self.parked:
            return False
        selector = self._selector
        return selector is None or (selector.offloads_quiet() and not selector.ready())

    @classmethod
    def install(cls, loop: asyncio.AbstractEventLoop) -> LoopProbe:
        selector = getattr(loop, "_selector", None)
        if selector is None or not callable(getattr(selector, "select", None)):
            return cls(watched=False)
        if not isinstance(selector, _ProbedSelector):
            # One proxy per loop, however many clocks watch it: select() stays one call deep.
            selector = _ProbedSelector(selector)
            loop._selector = selector  # type: ignore[attr-defined]
            _count_offloads(loop, selector)
        probe = cls(watched=True, selector=selector)
        selector.probes += (probe,)
        return probe

    @staticmethod
    def uninstall(loop: asyncio.AbstractEventLoop, probe: LoopProbe) -> None:
        selector = getattr(loop, "_selector", None)
        if isinstance(selector, _ProbedSelector):
            selector.probes = tuple(p for p in selector.probes if p is not probe)


class _ProbedSelector:
    """A selector proxy that records, for every probe, when its loop waits and runs again."""

    __slots__ = ("_selector", "offloads", "probes")

    def __init__(self, selector: object) -> None:
        self._selector = selector
        #: Calls the loop handed to an executor (``asyncio.to_thread``) that have not finished.
        self.offloads: set[ThreadProbe] = set()
        # Replaced whole, never mutated: another thread may attach or detach a probe.
        self.probes: tuple[LoopProbe, ...] = ()

    def select(self, timeout: float | None = None) -> list[tuple[object, int]]:
        probes = self.probes
        # ``select(0)`` means the loop has callbacks ready: it is not waiting for anything.
        parked = timeout is None or timeout > 0
        for probe in probes:
            probe.parked = parked
        try:
            return self._selector.select(timeout)  # type: ignore[attr-defined, no-any-return]
        finally:
            now = time.perf_counter()
            for probe in probes:
                probe.parked = False
                probe.since = now

    def offloads_quiet(self) -> bool:
        """No executor call of the loop is running Python code right now."""
        now = time.perf_counter()
        return all(probe.quiet(now) for probe in list(self.offloads))

    def ready(self) -> bool:
        """Whether some registered file is ready now; callable from another thread.

        Polls with a zero timeout: the loops' selectors are level-triggered, so this neither
        waits nor takes anything from the loop's own ``select()``.
        """
        try:
            return bool(self._selector.select(0))  # type: ignore[attr-defined]
        except (OSError, ValueError, RuntimeError):
            return False  # closed under us: the loop's own state decides

    def __getattr__(self, name: str) -> object:
        return getattr(self._selector, name)


def _count_offloads(loop: asyncio.AbstractEventLoop, selector: _ProbedSelector) -> None:
    """Watch the loop's executor calls: a loop waiting for its own thread's work is not idle.

    ``asyncio.to_thread`` (a provider packing an archive, say) leaves the loop in ``select()``
    while a worker thread computes for it; that is work, not waiting on the fake. A worker
    blocked in one call (``thread.join``, a lock) stops counting after ``threadwatch.STUCK``
    like any attending thread, so a loop waiting on a waiter never freezes time.
    """
    run_in_executor = loop.run_in_executor

    def counted(executor: Any, func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        probe = ThreadProbe(0, time.perf_counter())  # busy from now, not from its first step
        probe.attending = 1
        selector.offloads.add(probe)
        future = run_in_executor(executor, functools.partial(_offloaded, probe, func), *args)
        # Dropped on the loop's thread once the result is there, not when the worker returns:
        # between the two the loop may still sit in select() before the wake-up reaches it.
        future.add_done_callback(lambda _: selector.offloads.discard(probe))
        return future

    loop.run_in_executor = counted  # type: ignore[method-assign,assignment]


def _offloaded(probe: ThreadProbe, func: Callable[..., Any], *args: Any) -> Any:
    probe.ident = threading.get_ident()
    return func(*args)
