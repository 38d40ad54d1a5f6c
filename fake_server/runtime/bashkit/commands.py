"""Commands a test adds to the sandbox image (``node``, ``git``, …) as Python callables.

A registered command is a bashkit custom command in every interpreter the fake starts, plus
a ``/usr/bin/<name>`` wrapper script on every disk (``/bin`` links to ``usr/bin``), so scripts
can call it by name, by absolute path, through ``env`` and through ``exec``.
"""

from __future__ import annotations

import inspect
import re
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from fake_server.runtime.bashkit.disk import IMAGE_COMMANDS

if TYPE_CHECKING:
    from fake_server.clock import Clock
    from fake_server.runtime.bashkit.disk import SandboxDisk

__all__ = ["CommandFunc", "CommandIO", "CommandRegistry", "RegisteredCommand"]

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


class _Reader(Protocol):
    async def __call__(self) -> bytes: ...


class _Writer(Protocol):
    async def __call__(self, data: bytes) -> None: ...


@dataclass(eq=False)
class CommandIO:
    """What a registered command receives: its arguments, environment and standard streams.

    ``argv[0]`` is the command name as registered. Async commands await ``read_stdin()`` and
    ``write_stdout()``/``write_stderr()``; a plain (sync) callable finds its whole stdin in
    ``stdin_data`` and appends output to ``stdout_buffer``/``stderr_buffer``, which are sent
    when it returns.

    While it runs, the command counts as busy for a ``VirtualClock``: wait with
    ``clock.sleep()``, and wrap waits on anything outside the fake in ``clock.idle()``, or time
    will not move meanwhile.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: str
    disk: SandboxDisk
    clock: Clock
    _read: _Reader = field(repr=False)
    _write_out: _Writer = field(repr=False)
    _write_err: _Writer = field(repr=False)
    stdin_data: bytes = b""
    stdout_buffer: bytearray = field(default_factory=bytearray, repr=False)
    stderr_buffer: bytearray = field(default_factory=bytearray, repr=False)

    async def read_stdin(self) -> bytes:
        """All of stdin (``b""`` when there is none); waits until the writer closes it."""
        return await self._read()

    async def write_stdout(self, data: bytes) -> None:
        await self._write_out(bytes(data))

    async def write_stderr(self, data: bytes) -> None:
        await self._write_err(bytes(data))


CommandFunc = Callable[[CommandIO], Awaitable[int] | int]


@dataclass(frozen=True, slots=True)
class RegisteredCommand:
    """One registered command and how it reacts to ``SIGTERM``."""

    name: str
    func: CommandFunc
    ignores_sigterm: bool = False

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func) or inspect.iscoroutinefunction(
            getattr(self.func, "__call__", None)  # noqa: B004 - async callable objects
        )


class CommandRegistry:
    """User-registered image commands (``node``, ``git``…), shared by all sandboxes of a fake."""

    def __init__(self) -> None:
        self._commands: dict[str, RegisteredCommand] = {}
        self._disks: weakref.WeakSet[SandboxDisk] = weakref.WeakSet()

    def register(self, name: str, func: CommandFunc, *, ignores_sigterm: bool = False) -> None:
        """Add (or replace) ``name``; it appears as ``/usr/bin/<name>`` on every disk."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError("a command name is one word of letters, digits, '_', '.', '+', '-'")
        if not callable(func):
            raise TypeError("a registered command must be callable")
        self._commands[name] = RegisteredCommand(name, func, ignores_sigterm)
        for disk in list(self._disks):
            if not disk.wiped:
                disk.install_command(name)

    def unregister(self, name: str) -> None:
        """Remove ``name`` and its wrappers; unknown names are ignored.

        A name the image itself provides (``sed``, ``tar``…) keeps its wrappers and falls back
        to the built-in command.
        """
        if self._commands.pop(name, None) is None or name in IMAGE_COMMANDS:
            return
        for disk in list(self._disks):
            disk.uninstall_command(name)

    def names(self) -> list[str]:
        return sorted(self._commands)

    def clear(self) -> None:
        for name in self.names():
            self.unregister(name)

    def get(self, name: str) -> RegisteredCommand | None:
        return self._commands.get(name)

    def commands(self) -> list[RegisteredCommand]:
        """A snapshot; safe while another thread registers (the fake may run in a thread)."""
        snapshot = dict(self._commands)
        return [snapshot[name] for name in sorted(snapshot)]

    def attach(self, disk: SandboxDisk) -> None:
        """Install every registered command on ``disk`` and keep it updated from now on."""
        if disk not in self._disks and not disk.wiped:
            self._disks.add(disk)
            for name in self._commands:
                disk.install_command(name)
