"""The out-of-band target over the fake's ``World``, safe to call from the test's thread.

Every change runs on the fake's loop (``loopcall.call_on_loop``), so it has happened when the
call returns. Errors of the sandbox's disk become ``TargetError`` naming the action's field, so
the control API answers 400 and an armed fault is skipped rather than failing the request.
The account resources' changes are made by a ``faults.world_resources.ResourceChanges`` it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.faults.target import TargetError, UnknownTargetError
from fake_server.faults.world_resources import ResourceChanges
from fake_server.loopcall import call_on_loop

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from fake_server.models import Process, Sandbox, World

__all__ = ["WorldTarget"]


class WorldTarget:
    """Applies out-of-band changes to ``world`` on the loop ``loop()`` returns (if running)."""

    def __init__(
        self,
        world: World,
        loop: Callable[[], asyncio.AbstractEventLoop | None] = lambda: None,
    ) -> None:
        self._world = world
        self._loop = loop
        self._resources = ResourceChanges(world, self._run)

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
        def write() -> None:
            sandbox = self._sandbox(sandbox_id)
            try:
                sandbox.disk.write_file(path, data)
            except IsADirectoryError:
                raise TargetError("is a directory in the sandbox", field="path") from None
            except NotADirectoryError:
                raise TargetError("has a parent that is not a directory", field="path") from None
            except (OSError, ValueError):
                raise TargetError("cannot be written in the sandbox", field="path") from None
            except RuntimeError:  # the disk was wiped: the sandbox is destroyed
                raise UnknownTargetError("no such sandbox") from None

        self._run(write)

    def evict_output(self, sandbox_id: str, process_id: str, up_to_seq: int | None) -> None:
        self._run(lambda: self._process(sandbox_id, process_id).evict_output(up_to_seq))

    def crash_process(self, sandbox_id: str, process_id: str, signal: str) -> None:
        self._run(lambda: self._process(sandbox_id, process_id).crash(signal))

    def vanish_network(self, network_id: str, account: str | None) -> int:
        return self._resources.vanish_network(network_id, account)

    def detach_disk(
        self, disk_id: str, sandbox_id: str | None, mount_path: str | None, account: str | None
    ) -> int:
        return self._resources.detach_disk(disk_id, sandbox_id, mount_path, account)

    def fail_template_build(self, template_id: str, reason: str, account: str | None) -> None:
        self._resources.fail_template_build(template_id, reason, account)

    def exhaust_credit(self, account: str | None) -> None:
        self._resources.exhaust_credit(account)

    def _sandbox(self, sandbox_id: str) -> Sandbox:
        """A sandbox that still exists: a destroyed one (its disk wiped) takes no change."""
        sandbox = self._world.find_sandbox(sandbox_id)
        if sandbox is not None:
            sandbox.settle()
        if sandbox is None or sandbox.status == "destroyed":
            raise UnknownTargetError("no such sandbox")
        return sandbox

    def _process(self, sandbox_id: str, process_id: str) -> Process:
        process = self._sandbox(sandbox_id).processes.get(process_id)
        if process is None:
            raise UnknownTargetError("no such process")
        return process

    def _run(self, change: Callable[[], None]) -> None:
        call_on_loop(self._loop(), change)
