"""Abort signals: the Python counterpart of ``AbortController``/``AbortSignal``.

A signal aborts once, with a *reason* exception. ``OperationTimeout`` means a deadline fired (a
timed-out command keeps its partial output); ``OperationCancelled`` means the host cancelled
(release, destroy, shutdown). Code under ``signal.scope()`` (or ``run``/``sleep``) is cancelled
the moment the signal aborts and the reason is raised in its place, after the awaited work's own
cleanup (``finally`` blocks, ``async with`` exits) has run. Cancellation works like
``asyncio.timeout``: the current task is cancelled and the cancel is absorbed on the way out, so
no extra task is created per request and anyio/httpx state stays in one task.

Deadlines run on an injected clock: ``deadline_signal(clock, seconds)`` starts one small task
sleeping on the clock; close it (``close()``, ``with`` or ``async with``) when done.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Self, TypeVar

from pytest_createos.provider._errors import CreateosError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator
    from types import TracebackType

    from pytest_createos.provider._clock import Clock

__all__ = [
    "AbortController",
    "AbortSignal",
    "CombinedSignal",
    "DeadlineSignal",
    "OperationCancelled",
    "OperationTimeout",
    "any_signal",
    "deadline_signal",
]

T = TypeVar("T")


class OperationTimeout(CreateosError):
    """The reason of a signal whose deadline fired (JS ``TimeoutError``)."""

    def __init__(self, message: str = "CreateOS operation timed out.") -> None:
        super().__init__(message)


class OperationCancelled(CreateosError):
    """The reason of a signal the host aborted (JS ``AbortError``)."""

    def __init__(self, message: str = "CreateOS operation was cancelled.") -> None:
        super().__init__(message)


class AbortSignal:
    """Becomes aborted once, with a reason; work under ``scope()`` stops at that moment."""

    __slots__ = ("_listeners", "_reason")

    def __init__(self) -> None:
        self._reason: BaseException | None = None
        self._listeners: list[Callable[[BaseException], None]] = []

    @property
    def aborted(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> BaseException | None:
        return self._reason

    def raise_if_aborted(self) -> None:
        """Raise the reason if the signal has aborted."""
        if self._reason is not None:
            raise self._reason.with_traceback(None)

    def add_listener(self, listener: Callable[[BaseException], None]) -> Callable[[], None]:
        """Call ``listener(reason)`` on abort (at once if already aborted); returns a remover."""
        if self._reason is not None:
            listener(self._reason)
            return _noop
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def _abort(self, reason: BaseException) -> None:
        if self._reason is not None:
            return
        self._reason = reason
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener(reason)

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Cancel the enclosed code when the signal aborts, and raise the reason instead."""
        self.raise_if_aborted()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("AbortSignal.scope() needs a running asyncio task")
        baseline = task.cancelling()
        fired = False

        def on_abort(_: BaseException) -> None:
            nonlocal fired
            fired = True
            task.cancel()

        remove = self.add_listener(on_abort)
        try:
            yield
        except asyncio.CancelledError:
            if fired:
                fired = False
                if task.uncancel() <= baseline and self._reason is not None:
                    raise self._reason.with_traceback(None) from None
            raise
        finally:
            remove()
            if fired:
                # The cancel was swallowed by the work; rebalance the task's cancel count.
                task.uncancel()

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``; if the signal aborts first, cancel it and raise the reason."""
        if self._reason is not None:
            close = getattr(awaitable, "close", None)
            if callable(close):
                close()  # a coroutine that never ran must not warn "never awaited"
            self.raise_if_aborted()
        with self.scope():
            return await awaitable
        raise AssertionError("unreachable")  # pragma: no cover - mypy cannot see scope() raise

    async def sleep(self, clock: Clock, seconds: float) -> None:
        """Sleep on ``clock``, stopping early with the reason if the signal aborts."""
        with self.scope():
            await clock.sleep(seconds)


class AbortController:
    """Owns a signal and aborts it (host cancellation defaults to ``OperationCancelled``)."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: BaseException | None = None) -> None:
        self.signal._abort(reason if reason is not None else OperationCancelled())


class _ClosableSignal(AbortSignal):
    """A signal that holds resources (a timer task, listeners) until closed."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class DeadlineSignal(_ClosableSignal):
    """Aborts with ``OperationTimeout`` after ``seconds`` on the clock; ``close()`` stops it."""

    __slots__ = ("_task",)

    def __init__(self, clock: Clock, seconds: float) -> None:
        super().__init__()
        self._task: asyncio.Task[None] | None = None
        if seconds <= 0:
            self._abort(OperationTimeout())
        else:
            # The deadline is fixed now, not when the timer task first runs.
            at = clock.now() + seconds
            self._task = asyncio.get_running_loop().create_task(self._expire(clock, at))

    async def _expire(self, clock: Clock, at: float) -> None:
        await clock.sleep(at - clock.now())
        self._task = None
        self._abort(OperationTimeout())

    def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()


class CombinedSignal(_ClosableSignal):
    """Aborts when any source aborts, with that source's reason; ``close()`` detaches it."""

    __slots__ = ("_removers",)

    def __init__(self, signals: tuple[AbortSignal, ...]) -> None:
        super().__init__()
        self._removers: list[Callable[[], None]] = []
        for source in signals:
            self._removers.append(source.add_listener(self._abort))
            if self.aborted:
                break

    def close(self) -> None:
        removers, self._removers = self._removers, []
        for remove in removers:
            remove()


def deadline_signal(clock: Clock, seconds: float) -> DeadlineSignal:
    """A signal that times out after ``seconds`` on ``clock`` (needs a running loop)."""
    return DeadlineSignal(clock, seconds)


def any_signal(*signals: AbortSignal) -> CombinedSignal:
    """A signal that aborts as soon as any of ``signals`` does."""
    return CombinedSignal(signals)


def _noop(*_: Any) -> None:
    return None
