"""``VirtualClock``: time that moves only when every party provably waits.

``advance()`` moves it by hand; with ``autojump`` on (the default) it jumps to the next deadline
once nobody is busy, nothing is on the wire, every watched loop is parked and every attending
thread waits -- trio's ``MockClock`` autojump is the model. While a real program runs
(``real_time()``), it follows real time instead. The rules are in docs/time.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from fake_server.clock.base import Hold
from fake_server.clock.realtime import RealFlow
from fake_server.clock.watch import LoopProbe, ThreadProbe
from fake_server.clock.wire import ExchangeLedger

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["DEFAULT_EPOCH", "VirtualClock"]

_T = TypeVar("_T")

#: Unix time at virtual ``now() == 0``: 2026-01-01T00:00:00Z, so timestamps are reproducible.
DEFAULT_EPOCH = 1_767_225_600.0


@dataclass(order=True)
class _Sleeper:
    deadline: float
    seq: int
    loop: asyncio.AbstractEventLoop = field(compare=False)
    future: asyncio.Future[None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)
    woken: bool = field(default=False, compare=False)
    #: Woken when time reaches its deadline, but never a reason to jump there.
    passive: bool = field(default=False, compare=False)


class VirtualClock:
    """A clock that moves only when the program waits, so long timeouts cost no real time.

    Args:
        start: the initial ``now()``.
        autojump: jump to the next deadline when everything is quiet; off means only
            ``advance()`` moves time.
        autojump_threshold: real seconds of quiet before a jump: a debounce on top of the
            proof that everybody waits, never a substitute for it.
        epoch: Unix time at ``now() == 0``.
    """

    def __init__(
        self,
        start: float = 0.0,
        *,
        autojump: bool = True,
        autojump_threshold: float = 0.002,
        epoch: float = DEFAULT_EPOCH,
    ) -> None:
        if autojump_threshold < 0:
            raise ValueError("autojump_threshold must be >= 0 real seconds")
        self._now = float(start)
        self._epoch = float(epoch)
        self._autojump = autojump
        self._threshold = float(autojump_threshold)
        self._cond = threading.Condition(threading.RLock())
        self._heap: list[_Sleeper] = []
        self._seq = itertools.count()
        self._busy = 0
        self._held: dict[object, int] = {}  # busy tokens by task (None: outside a task)
        self._exchanges = ExchangeLedger()
        self._real = RealFlow()
        self._real.enabled = autojump
        self._last_activity = time.perf_counter()
        self._jumps = 0
        self._loops: dict[asyncio.AbstractEventLoop, LoopProbe] = {}
        self._threads: dict[int, ThreadProbe] = {}
        self._closed = False
        self._watcher: threading.Thread | None = None
        #: The watcher waits with nothing to jump to (no sleeper, or autojump off).
        self._watcher_parked = False
        # Created inside a running loop (a test's): watch that loop from the start, so that its
        # code running between two requests of a client that does not report is never skipped.
        self._touch()

    # -- reading time -------------------------------------------------------------------------

    def now(self) -> float:
        with self._cond:
            self._touch()
            self._now = self._real.catch_up(self._now)
            return self._now

    def time(self) -> float:
        return self._epoch + self.now()

    @property
    def autojump(self) -> bool:
        return self._autojump

    @autojump.setter
    def autojump(self, value: bool) -> None:
        with self._cond:
            self._autojump = bool(value)
            self._now = self._real.enable(self._autojump, self._now)
            self._cond.notify_all()

    @property
    def busy_tokens(self) -> int:
        """Busy tokens held right now (tasks' and holds'): for tests and debugging."""
        with self._cond:
            return self._busy

    @property
    def in_transit(self) -> int:
        """Open exchanges with a request, a reply head or body bytes on the wire right now."""
        with self._cond:
            return self._exchanges.in_flight()

    @property
    def open_exchanges(self) -> int:
        """Exchanges announced and not yet closed (in flight or not): a leak gauge for tests."""
        with self._cond:
            return len(self._exchanges)

    @property
    def jumps(self) -> int:
        """How many times time moved (by autojump or ``advance``): a cheap progress gauge."""
        return self._jumps

    # -- waiting ------------------------------------------------------------------------------

    async def sleep(self, seconds: float, *, passive: bool = False) -> None:
        """Wait ``seconds`` of fake time. ``passive``: wake when time gets there (``advance``,
        a jump to a later deadline) but never let autojump jump there for this sleeper alone,
        for a wait whose end harms a client that is merely between requests (auto-pause)."""
        if seconds != seconds:  # NaN
            raise ValueError("cannot sleep for NaN seconds")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._cond:
            self._touch()
            self._now = self._real.catch_up(self._now)
            deadline = self._now + max(0.0, seconds)
            sleeper = _Sleeper(deadline, next(self._seq), loop, future, passive=passive)
            if deadline <= self._now:
                # Zero-length sleeps still yield, but never move time.
                future.set_result(None)
            else:
                heapq.heappush(self._heap, sleeper)
                self._ensure_watcher()
                self._wake_watcher(sooner=self._heap[0] is sleeper)
        with self.idle():
            try:
                await future
            finally:
                with self._cond:
                    if not future.done() or future.cancelled():
                        sleeper.cancelled = True
                    if sleeper.woken:
                        # The wake-up was counted busy until this task actually ran again.
                        sleeper.woken = False
                        self._busy -= 1
                    self._touch()

    def advance(self, seconds: float) -> None:
        """Move time forward by hand, waking every sleeper whose deadline passes, in order."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards; advance() takes seconds >= 0")
        with self._cond:
            target = self._real.catch_up(self._now) + seconds
            while self._heap and self._heap[0].deadline <= target:
                self._fire_next()
            self._now = target
            self._jumps += 1
            self._touch()

    def next_deadline(self) -> float | None:
        """The earliest deadline autojump would go to (passive sleeps aside), or ``None``."""
        with self._cond:
            self._now = self._real.catch_up(self._now)
            self._drop_cancelled()
            return self._jump_target()

    def _jump_target(self) -> float | None:
        live = (s for s in self._heap if not (s.passive or s.cancelled or s.future.done()))
        return min((s.deadline for s in live), default=None)

    # -- quietness reporting ------------------------------------------------------------------

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        task = _current_task()
        self._hold_for(task, 1)
        try:
            yield
        finally:
            self._hold_for(task, -1)

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        task = _current_task()
        with self._cond:
            held = self._held.get(task, 0)
            self._hold_for(task, -held)
        try:
            yield
        finally:
            self._hold_for(task, held)

    def hold(self) -> Hold:
        self._hold_for(_NO_TASK, 1)
        return Hold(lambda: self._hold_for(_NO_TASK, -1))

    def real_time(self) -> Hold:
        """A real program runs: until released, time follows real time (docs/time.md, rule 8).

        It never jumps past the program and never stands still while it runs: a deadline on
        this clock comes after as many real seconds as fake ones, whatever else is busy."""
        with self._cond:
            self._now = self._real.started(self._now)
            self._touch()
            # No watcher of its own: one starts with the first sleeper, which is all it wakes.
            self._cond.notify_all()
        return Hold(self._real_ended)

    def _real_ended(self) -> None:
        with self._cond:
            self._now = self._real.ended(self._now)
            self._touch()
            self._cond.notify_all()

    @property
    def following_real_time(self) -> bool:
        """Whether a real program runs (autojump on), so time follows real time: for tests
        and debugging."""
        with self._cond:
            return self._real.flowing

    def _hold_for(self, task: object, tokens: int) -> None:
        """Add (or give back) busy tokens of ``task``; a hold's belong to no task."""
        with self._cond:
            self._busy += tokens
            if task is not _NO_TASK:
                left = self._held.get(task, 0) + tokens
                if left > 0:
                    self._held[task] = left
                else:
                    self._held.pop(task, None)
            self._touch()

    @contextlib.contextmanager
    def attend(self) -> Iterator[None]:
        """The calling thread's own code counts as work: time moves only while it ``waiting()``.

        For a thread with no event loop to watch (a sync test's), whose code between two calls
        to the fake runs unseen. Nests."""
        ident = threading.get_ident()
        with self._cond:
            probe = self._threads.get(ident)
            if probe is None:
                probe = ThreadProbe(ident, time.perf_counter(), threading.get_native_id())
                self._threads[ident] = probe
            probe.attending += 1
            self._touch()
        try:
            yield
        finally:
            with self._cond:
                probe.attending -= 1
                if not probe.attending:
                    del self._threads[ident]
                self._touch()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """An attending thread waits on the fake (a request, a stream, a relayed coroutine).

        Time may move meanwhile; it counts as working again before it claims what it waited
        for. A no-op on a thread that does not attend."""
        with self._cond:
            probe = self._threads.get(threading.get_ident())
            if probe is not None:
                probe.waiting += 1
            self._touch()
        try:
            yield
        finally:
            with self._cond:
                if probe is not None:
                    probe.waiting -= 1
                    probe.moved(time.perf_counter())
                self._touch()

    # -- exchanges of clock-aware clients (docs/time.md, rule 3; ``fake_server.clock.wire``) --

    def request_sent(self) -> str:
        """Open an exchange; its id goes in ``EXCHANGE_HEADER`` until ``exchange_closed(id)``."""
        return self._report(self._exchanges.open)

    def request_arrived(self, exchange: str | None = None) -> bool:
        """The server has the request: True (replies are counted) when the exchange is open."""
        return self._report(self._exchanges.arrived, exchange)

    def response_sent(self, exchange: str | None = None, size: int = 0) -> None:
        """The server is about to write a reply head (``size=0``) or ``size`` body bytes."""
        self._report(self._exchanges.sent, exchange, size or 1)

    def response_received(self, exchange: str | None = None, size: int = 0) -> None:
        """The client has the reply head (``size=0``: the request arrived, wherever it went) or
        has read ``size`` more body bytes."""
        self._report(self._exchanges.received, exchange, size or 1, head=not size)

    def exchange_closed(self, exchange: str | None = None) -> None:
        """The client is done with the exchange (body read, error or abandon); idempotent."""
        self._report(self._exchanges.close, exchange)

    def _report(self, change: Callable[..., _T], *args: object, **kwargs: object) -> _T:
        with self._cond:
            self._touch()
            return change(*args, **kwargs)

    def close(self) -> None:
        """Stop the autojump thread; sleepers still pending are left for ``advance()``."""
        with self._cond:
            self._closed = True
            loops, self._loops = self._loops, {}
            self._cond.notify_all()
        for loop, probe in loops.items():
            LoopProbe.uninstall(loop, probe)
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=1.0)

    # -- internals ----------------------------------------------------------------------------

    def _touch(self) -> None:
        self._last_activity = time.perf_counter()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if loop not in self._loops and not self._closed:
            self._loops[loop] = LoopProbe.install(loop)

    def _loops_parked(self, real_now: float) -> bool:
        """Every watched loop waits in ``select()`` (or is closed, stopped or stuck)."""
        for loop, probe in list(self._loops.items()):
            if loop.is_closed():
                del self._loops[loop]
            elif loop.is_running() and not probe.waiting(real_now):
                return False
        return True

    def _threads_quiet(self, real_now: float) -> bool:
        """Every attending thread waits on the fake (or is blocked in a call it did not say)."""
        if not self._threads:
            return True
        # An attending thread running a watched loop is watched there.
        in_loops = {probe.ident for loop, probe in self._loops.items() if loop.is_running()}
        return all(
            probe.ident in in_loops or probe.quiet(real_now) for probe in self._threads.values()
        )

    def _drop_cancelled(self) -> None:
        while self._heap and (self._heap[0].cancelled or self._heap[0].future.done()):
            heapq.heappop(self._heap)

    def _fire_next(self) -> None:
        sleeper = heapq.heappop(self._heap)
        if sleeper.cancelled or sleeper.future.done():
            return
        self._now = max(self._now, sleeper.deadline)
        try:
            sleeper.loop.call_soon_threadsafe(_wake, sleeper.future)
        except RuntimeError:  # the sleeper's loop is already closed: nobody will run again
            return
        sleeper.woken = True
        self._busy += 1

    def _wake_watcher(self, *, sooner: bool = False) -> None:
        """Wake the watcher out of its wait with nothing to jump to (a deadline arrived), or,
        while time follows real time, out of its wait for a later deadline (``sooner``).

        Reports never wake it (a thread switch each): they restart the quiet period, and the
        watcher's own timeout checks again once that has passed."""
        if self._watcher_parked or (sooner and self._real.flowing):
            self._cond.notify_all()

    def _ensure_watcher(self) -> None:
        if self._watcher is None and not self._closed:
            self._watcher = threading.Thread(
                target=self._watch, name="createos-fake-clock", daemon=True
            )
            self._watcher.start()

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                self._drop_cancelled()
                if self._real.flowing:
                    self._follow_real_time()
                    continue
                if not self._autojump or not self._heap:
                    self._watcher_parked = True
                    self._cond.wait(0.05)
                    self._watcher_parked = False
                    continue
                real_now = time.perf_counter()
                quiet_for = real_now - self._last_activity
                if (
                    self._busy > 0
                    or self._exchanges.in_flight()
                    or quiet_for < self._threshold
                    or not self._loops_parked(real_now)
                    or not self._threads_quiet(real_now)
                ):
                    self._cond.wait(max(self._threshold - quiet_for, self._threshold / 4, 1e-4))
                    continue
                deadline = self._jump_target()
                if deadline is None:  # only passive sleepers: nothing to jump to
                    self._watcher_parked = True
                    self._cond.wait(0.05)
                    self._watcher_parked = False
                    continue
                while self._heap and self._heap[0].deadline <= deadline:
                    self._fire_next()
                self._now = max(self._now, deadline)
                self._jumps += 1
                self._touch()

    def _follow_real_time(self) -> None:
        """One step of the watcher while real programs run: wake whoever's deadline came,
        then wait for the next one in real time (woken sooner by an earlier sleeper or the
        end of the last program)."""
        self._now = self._real.catch_up(self._now)
        woke = False
        while self._heap and self._heap[0].deadline <= self._now:
            self._fire_next()
            woke = True
        if woke:
            self._jumps += 1
            self._touch()
        self._drop_cancelled()
        wait = self._heap[0].deadline - self._now if self._heap else _REAL_IDLE
        self._cond.wait(min(max(wait, 0.0), _REAL_IDLE))


#: Real seconds the watcher waits at most while time follows real time (it is woken sooner
#: by an earlier deadline and by the end of the last real program).
_REAL_IDLE = 1.0

#: The owner of holds' busy tokens: no task, so no ``idle()`` can give them back.
_NO_TASK = object()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _current_task() -> asyncio.Task[object] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None
