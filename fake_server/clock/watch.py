"""Who is provably waiting: event loops parked in ``select()`` and attending threads.

The ``VirtualClock``'s view of "idle" (docs/time.md, rules 5 and 6). A loop waiting in
``select()`` with nothing ready cannot be about to do anything; a loop between two callbacks
can. A thread with no loop (a sync test's) attends and counts as working except inside
``waiting()``. A loop out of ``select()``, or an attending thread whose frame stands still, for
``STUCK`` real seconds is blocked in a call the clock was not told about and stops counting,
so that an unknown wait never freezes time, unless the kernel shows the thread running or
ready to run: C code that released the GIL (hashing, compression) and a thread a loaded
machine leaves unscheduled are working, not blocked.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

__all__ = ["STUCK", "LoopProbe", "ThreadProbe", "runnable", "sleeps_at"]

#: Real seconds a loop or an attending thread must stand still before it counts as blocked.
STUCK = 0.5


def runnable(native: int) -> bool:
    """Whether the kernel shows the thread running or ready to run (state ``R``).

    Such a thread is computing, whatever its Python frame shows: in C code that released the
    GIL, or waiting for a CPU on a loaded machine. Reading the state releases the GIL, which
    wakes a thread waiting for it, so such a thread reads as running too. False where
    ``/proc`` cannot tell (another system, a thread that has ended): the frame alone decides.
    """
    if not native:
        return False
    try:
        with open(f"/proc/self/task/{native}/stat", "rb") as stat:
            line = stat.read()
    except OSError:
        return False
    # "pid (comm) S ...": the name may hold spaces and ")"; the state follows the last one.
    end = line.rfind(b")")
    return line[end + 2 : end + 3] == b"R"


def _where(ident: int) -> tuple[int, int] | None:
    frame = sys._current_frames().get(ident)
    return None if frame is None else (id(frame), frame.f_lasti)


def sleeps_at(ident: int, native: int, where: tuple[int, int] | None) -> bool:
    """Whether the thread sleeps in the kernel, still where it stood (``where``, taken from a
    frame the caller still holds) after its state was read: reading the state lets it run,
    and it may move meanwhile, into the clock's own lock, say (a sleep there is no wait on
    the fake)."""
    return not runnable(native) and _where(ident) == where


class ThreadProbe:
    """One attending thread: how deep it is in ``waiting()``, and where it last stood."""

    __slots__ = ("_where", "attending", "ident", "native", "since", "waiting")

    def __init__(self, ident: int, now: float, native: int = 0) -> None:
        self.ident = ident
        self.native = native  # the kernel's id of the thread (``threading.get_native_id()``)
        self.attending = 0
        self.waiting = 0
        self._where: tuple[int, int] | None = None
        self.since = now

    def quiet(self, now: float) -> bool:
        """Waiting on the fake, gone, or blocked in one call for ``STUCK`` seconds."""
        if self.waiting or not self.attending:
            return True
        if not self.ident:
            return False  # handed to a thread that has not started it yet
        frame = sys._current_frames().get(self.ident)
        if frame is None:
            return True  # the thread has ended
        where = (id(frame), frame.f_lasti)
        if where != self._where:
            self._where = where
            self.since = now
            return False
        return now - self.since >= STUCK and sleeps_at(self.ident, self.native, where)

    def moved(self, now: float) -> None:
        """The thread reported something: it is running, whatever its frame says."""
        self._where = None
        self.since = now


class LoopProbe:
    """Whether one event loop is parked in ``select()`` with nothing ready.

    It rides on the selector of an asyncio selector loop (a private attribute); other loops
    (uvloop) get a probe that always reads as parked, leaving the decision to the other rules.
    """

    __slots__ = ("_selector", "ident", "native", "parked", "since")

    def __init__(self, *, watched: bool, selector: _ProbedSelector | None = None) -> None:
        self.parked = not watched
        self.since = time.perf_counter()
        self._selector = selector
        self.ident = threading.get_ident()  # the loop's thread: probes install from there
        self.native = threading.get_native_id()

    def waiting(self, now: float) -> bool:
        """Parked with nothing ready, or stuck outside ``select()`` for ``STUCK`` seconds.

        ``parked`` is set before the loop's thread enters ``select()``; a busy machine may
        leave that thread unscheduled after its socket became ready, so readiness is asked of
        the selector too, without waiting and without consuming anything.
        """
        if not self.parked:
            if now - self.since < STUCK:
                return False
            frame = sys._current_frames().get(self.ident)  # held: its id stays its own
            if frame is None:
                return True  # the loop's thread has ended
            return sleeps_at(self.ident, self.native, (id(frame), frame.f_lasti))
        selector = self._selector
        return selector is None or (selector.offloads_quiet(now) and not selector.ready())

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

    def offloads_quiet(self, now: float) -> bool:
        """No executor call of the loop is running Python code right now."""
        return all(probe.quiet(now) for probe in list(self.offloads))

    def ready(self) -> bool:
        """Whether some registered file is ready now (a level-triggered zero-timeout poll)."""
        try:
            return bool(self._selector.select(0))  # type: ignore[attr-defined]
        except (OSError, ValueError, RuntimeError):
            return False  # closed under us: the loop's own state decides

    def __getattr__(self, name: str) -> object:
        return getattr(self._selector, name)


def _count_offloads(loop: asyncio.AbstractEventLoop, selector: _ProbedSelector) -> None:
    """A loop waiting for its own executor's work (a provider packing an archive) is not idle.

    The worker is an attending thread of its own, so one blocked in a call (``join``, a lock)
    stops counting after ``STUCK`` and a loop waiting on a waiter never freezes time.
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
    probe.native = threading.get_native_id()
    probe.ident = threading.get_ident()  # last: a probe with an ident is read as started
    return func(*args)
