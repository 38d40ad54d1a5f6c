"""One way to run a piece of synchronous code on the fake's event loop from any thread.

Models live on the fake's loop (processes are tasks there). A sync test talking to a fake that
serves from its background thread, or an async test in another loop, hands the change to that
loop and waits for it, so it has happened when the call returns. On the loop itself, or when
the loop is not running, the code simply runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["call_on_loop"]

_T = TypeVar("_T")

# Real seconds to wait for the loop to run the code; it only touches memory, so a loop that
# takes longer is stuck, and a clear error beats a hang.
_TIMEOUT = 30.0


def call_on_loop(loop: asyncio.AbstractEventLoop | None, func: Callable[[], _T]) -> _T:
    """``func()`` run on ``loop`` (waiting for it there) or here when that is the same."""
    if loop is None or loop.is_closed() or not loop.is_running() or _on(loop):
        return func()
    done: concurrent.futures.Future[_T] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(func())
        except BaseException as exc:  # handed to the caller's thread
            done.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return done.result(timeout=_TIMEOUT)


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
