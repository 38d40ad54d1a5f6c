"""One private event loop in a background thread, and a provider that always runs on it.

httpx's ``AsyncClient`` belongs to the loop it first ran in, and pytest-asyncio and anyio close
a test's loop *before* plain fixtures are torn down. So the plugin's providers never run in the
test's loop: every coroutine method is relayed to this loop, awaited from whatever loop the test
uses (or run to completion from a sync test), and teardown can always shut them down cleanly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import importlib
import inspect
import math
import threading
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fake_server.clock import Hold
from pytest_createos.provider import CreateosProvider

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from fake_server.clock import VirtualClock

__all__ = ["BRIDGED_METHODS", "BackgroundLoop", "BridgedProvider", "RunSync"]

#: pytest leaves this module's frames out of a failure's traceback (``--fulltrace`` shows
#: them): they relay a call between loops and never say anything about the failure.
__tracebackhide__ = True

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)

#: Real seconds a teardown waits for a provider to shut down before giving up loudly.
SHUTDOWN_TIMEOUT = 30.0

#: Every coroutine method of ``CreateosProvider``; a test checks none is missing.
BRIDGED_METHODS = (
    "acquire_lease",
    "destroy_lease",
    "execute",
    "probe",
    "realize_workspace",
    "release_lease",
    "resume_lease",
    "shutdown",
    "sync_in",
    "sync_out",
)


class RunSync(Protocol):
    """The ``createos_run`` fixture: run a coroutine to completion from a sync test."""

    def __call__(self, awaitable: Awaitable[_T], /, *, timeout: float | None = None) -> _T:
        """Run ``awaitable`` on the plugin's loop; ``timeout`` is in real seconds."""
        ...


class _Handoff:
    """Holds a virtual clock across the two thread hand-offs of a relayed coroutine.

    Between scheduling a coroutine on the background loop and its first step there, and
    between its end and the caller running again, both loops may sit in ``select()`` while a
    wake-up is on its way: without a hold, a clock could jump to a pending deadline right then.
    """

    __slots__ = ("_back", "_clock", "_lock", "_there")

    def __init__(self, clock: VirtualClock | None) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._back: Hold | None = None  # taken at the end unless the caller has resumed
        self._there = self._hold()

    def _hold(self) -> Hold:
        return self._clock.hold() if self._clock else Hold()

    async def run(self, awaitable: Awaitable[_T]) -> _T:
        self._there.release()  # running on the background loop now
        try:
            return await awaitable
        finally:
            with self._lock:
                if self._back is None:
                    self._back = self._hold()  # until the caller has resumed

    def caller_resumed(self) -> None:
        """Called once by the caller after it got the result (or gave up); idempotent."""
        with self._lock:
            back, self._back = self._back, Hold()
        self._there.release()  # the coroutine may never have started
        if back is not None:
            back.release()


class BackgroundLoop:
    """An asyncio loop serving from a daemon thread until ``close()``.

    ``clock``, once set (the plugin sets the fake's), is held across every hand-off between
    the caller and this loop, so it never jumps while a coroutine travels between threads.
    """

    def __init__(self) -> None:
        self.clock: VirtualClock | None = None
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._main, args=(ready,), name="createos-plugin-loop", daemon=True
        )
        self._thread.start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def run(self, awaitable: Awaitable[_T], /, *, timeout: float | None = None) -> _T:
        """Run ``awaitable`` here and block the calling thread until it is done."""
        _check_run_arguments(awaitable, timeout)
        if threading.current_thread() is self._thread:
            if inspect.iscoroutine(awaitable):
                awaitable.close()  # it will never run; do not warn that it was never awaited
            raise RuntimeError(
                "createos_run cannot be used inside a coroutine it runs; await it instead"
            )
        handoff = _Handoff(self.clock)
        future = asyncio.run_coroutine_threadsafe(handoff.run(awaitable), self.loop)
        try:
            # A sync test's thread blocks on the fake's work here.
            with self.clock.waiting() if self.clock else contextlib.nullcontext():
                return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(
                f"createos_run: the coroutine did not finish within {timeout} real seconds"
            ) from None
        finally:
            handoff.caller_resumed()

    async def relay(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Await ``coroutine`` on this loop from any asyncio or trio loop (cancellation follows)."""
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is self.loop:
            return await coroutine
        handoff = _Handoff(self.clock)
        if current is None:  # trio (anyio's trio backend)
            future = asyncio.run_coroutine_threadsafe(
                handoff.run(_as_asyncio(coroutine)), self.loop
            )
            try:
                return await _wait_from_trio(future)
            finally:
                handoff.caller_resumed()
        future = asyncio.run_coroutine_threadsafe(handoff.run(coroutine), self.loop)
        try:
            return await asyncio.wrap_future(future)
        finally:
            handoff.caller_resumed()

    def close(self) -> None:
        """Stop the loop and join its thread; idempotent."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


async def _as_asyncio(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` as asyncio code: the task inherits the trio caller's context, whose
    sniffio marker would make httpx pick its trio backend on this asyncio loop."""
    import sniffio

    sniffio.current_async_library_cvar.set(None)
    return await coroutine


async def _wait_from_trio(future: concurrent.futures.Future[_T]) -> _T:
    """Await ``future`` from a trio loop; cancelling the wait cancels the coroutine."""
    trio: Any = importlib.import_module("trio")  # only ever imported under trio

    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def wake(_: object) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(done.set)

    future.add_done_callback(wake)
    try:
        await done.wait()
    except trio.Cancelled:
        future.cancel()
        raise
    return future.result()


def _relayed(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    method = getattr(CreateosProvider, name)

    @functools.wraps(method)
    async def relayed(self: BridgedProvider, *args: Any, **kwargs: Any) -> Any:
        return await self._bridge.relay(method(self, *args, **kwargs))

    return relayed


class BridgedProvider(CreateosProvider):
    """A ``CreateosProvider`` whose coroutines run on the plugin's background loop.

    Await its methods from any asyncio test loop, or pass them to ``createos_run`` in a sync
    test. Log callbacks given to ``execute`` are called from the background thread.
    """

    def __init__(self, bridge: BackgroundLoop, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._bridge = bridge

    def shutdown_blocking(self) -> None:
        """Shut down on the background loop from sync code (the fixture's teardown)."""
        self._bridge.run(CreateosProvider.shutdown(self), timeout=SHUTDOWN_TIMEOUT)


for _name in BRIDGED_METHODS:
    setattr(BridgedProvider, _name, _relayed(_name))


def _check_run_arguments(awaitable: object, timeout: object) -> None:
    """Misuse is refused where it happens, naming the parameter."""
    if not inspect.isawaitable(awaitable):
        raise TypeError(
            "createos_run(awaitable) takes a coroutine, e.g. "
            f"createos_run(createos_provider.probe(createos_env)); got {type(awaitable).__name__}"
        )
    if timeout is None:
        return
    positive = (
        isinstance(timeout, int | float)
        and not isinstance(timeout, bool)
        and 0 < timeout < math.inf
    )
    if not positive:
        if inspect.iscoroutine(awaitable):
            awaitable.close()  # it will never run; do not warn that it was never awaited
        raise ValueError(
            "createos_run(timeout=...) must be a positive number of real seconds or None; "
            f"got {timeout!r}"
        )
