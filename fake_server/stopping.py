"""How ``createos-fake serve`` stops on SIGINT or SIGTERM, in one place.

The first signal says so and sets ``stopping``; the caller then closes the fake, which kills
the sandboxes' processes first, so a running command never holds the exit. The handlers stay
installed while it closes: a second signal exits at once (``128 + signal``), without the
tracebacks a default ``KeyboardInterrupt`` raises inside a closing loop.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = ["StopSignals"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """``with StopSignals(say) as signals: await signals.stopping.wait()``."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stopping = asyncio.Event()
        #: The first signal received, if any.
        self.received: signal.Signals | None = None

    def __enter__(self) -> Self:
        self._loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            self._loop.add_signal_handler(sig, self._on_signal, sig)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._loop is not None
        for sig in _SIGNALS:
            self._loop.remove_signal_handler(sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        # Saying so comes last: a failing ``say`` (a closed stdout) must not keep the stop.
        if self.received is not None:
            try:
                self._say(f"createos-fake: second signal ({sig.name}): exiting now")
            finally:
                _exit(128 + sig)  # sandboxes run under bwrap --die-with-parent: they go too
            return
        self.received = sig
        self.stopping.set()
        self._say(
            f"createos-fake: {sig.name}: stopping (killing the sandboxes' processes; "
            "a second signal exits at once)"
        )


def _exit(status: int) -> None:
    """``os._exit`` (typed as returning, so a test may replace it)."""
    os._exit(status)
