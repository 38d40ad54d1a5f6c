"""The clock interface the fake waits on, its hand-off token and the wall-clock implementation."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["EXCHANGE_HEADER", "Clock", "Hold", "RealClock"]

#: The request header that carries an exchange id from a clock-aware client to the fake.
EXCHANGE_HEADER = "X-Fake-Clock-Exchange"


@runtime_checkable
class Clock(Protocol):
    """What the fake needs from time."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def time(self) -> float:
        """Unix time, for timestamps in API payloads."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock (cancellable)."""
        ...

    def busy(self) -> contextlib.AbstractContextManager[None]:
        """Mark the current task as doing work that time must not skip over."""
        ...

    def idle(self) -> contextlib.AbstractContextManager[None]:
        """Give back the current task's busy tokens while it waits on something external."""
        ...

    def hold(self) -> Hold:
        """A busy token that belongs to no task: released explicitly, from anywhere."""
        ...

    def real_time(self) -> Hold:
        """A real program runs: until released, time follows real time (rule 8)."""
        ...

    # The exchange reports of docs/time.md, rule 3 (``VirtualClock`` documents them).
    def request_sent(self) -> str | None: ...
    def request_arrived(self, exchange: str | None = None) -> bool: ...
    def response_sent(self, exchange: str | None = None, size: int = 0) -> None: ...
    def response_received(self, exchange: str | None = None, size: int = 0) -> None: ...
    def exchange_closed(self, exchange: str | None = None) -> None: ...


class Hold:
    """A task-independent busy token; ``release()`` is idempotent.

    It bridges hand-offs: a request handler takes one before it starts a process task and the
    runtime releases it once the interpreter holds its own token, so there is no instant in
    which nobody is busy and a virtual clock could jump.
    """

    __slots__ = ("_release",)

    def __init__(self, release: Callable[[], None] | None = None) -> None:
        self._release = release

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class RealClock:
    """Wall-clock time; every hook is a no-op."""

    def __init__(self) -> None:
        self._origin = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._origin

    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        yield

    def hold(self) -> Hold:
        return Hold()

    def real_time(self) -> Hold:
        return Hold()

    def request_sent(self) -> str | None:
        return None

    def request_arrived(self, exchange: str | None = None) -> bool:
        return False

    def response_sent(self, exchange: str | None = None, size: int = 0) -> None:
        pass

    def response_received(self, exchange: str | None = None, size: int = 0) -> None:
        pass

    def exchange_closed(self, exchange: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass
