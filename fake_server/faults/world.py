"""The out-of-band target over the fake's ``World``, safe to call from the test's thread.

Models run on the fake's event loop (processes are tasks there). A test may call
``fake.faults.crash_process(...)`` from a sync test while the fake serves from its background
thread, or from an async test in another loop; the change is then run on the fake's loop and
the call waits for it, so it has happened when the call returns.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING

from fake_server.faults.registry import UnknownTargetError

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models import Process, Sandbox, World

__all__ = ["WorldTarget"]

# Real seconds to wait for the fake's loop to apply a change; it only mutates memory.
_APPLY_TIMEOUT = 10.0


class WorldTarget:
    """Applies out-of-band changes to ``world`` on the loop ``loop()`` returns (if running)."""

    def __init__(
        self,
        world: World,
        loop: Callable[[], asyncio.AbstractEventLoop | None] = lambda: None,
    ) -> None:
        self._world = world
        self._loop = loop

    def set_status(self, sandbox_id: str, status: str) -> None:
        self._run(lambda: self._sandbox(sandbox_id).force_status(status))

    def forget(self, sandbox_id: str) -> None:
        def forget() -> None:
            account = self._world.account_of(sandbox_id)
            if account is None:
                raise UnknownTargetError("no such sandbox")
            account.forget_sandbox(sandbox_id)

        self._run(forget)

    def write_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        self._run(lambda: self._sandbox(sandbox_id).disk.write_file(path, data))

    def evict_output(self, sandbox_id: str, process_id: str, up_to_seq: int | None) -> None:
        self._run(lambda: self._process(sandbox_id, process_id).evict_output(up_to_seq))

    def crash_process(self, sandbox_id: str, process_id: str, signal: str) -> None:
        self._run(lambda: self._process(sandbox_id, process_id).crash(signal))

    def _sandbox(self, sandbox_id: str) -> Sandbox:
        sandbox = self._world.find_sandbox(sandbox_id)
        if sandbox is None:
            raise UnknownTargetError("no such sandbox")
        return sandbox

    def _process(self, sandbox_id: str, process_id: str) -> Process:
        process = self._sandbox(sandbox_id).processes.get(process_id)
        if process is None:
            raise UnknownTargetError("no such process")
        return process

    def _run(self, change: Callable[[], None]) -> None:
        loop = self._loop()
        if loop is None or loop.is_closed() or not loop.is_running() or _on(loop):
            change()
            return
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def apply() -> None:
            try:
                change()
            except BaseException as exc:  # handed to the caller's thread
                done.set_exception(exc)
            else:
                done.set_result(None)

        loop.call_soon_threadsafe(apply)
        done.result(timeout=_APPLY_TIMEOUT)


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
