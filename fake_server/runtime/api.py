"""The narrow interface between the fake's models and a sandbox runtime.

Two runtimes implement it: ``bashkit`` (the default: one in-memory disk and a bashkit shell per
sandbox, on the fake's clock) and ``process`` (a host directory per sandbox, real programs
under bubblewrap, on real time; ``fake_server.runtime.process``). The models only ever see:

``Runtime``
    One per fake and runtime name: ``new_sandbox()`` makes a ``Machine``; ``close()`` removes
    whatever is left (processes, directories).
``Machine``
    One sandbox: ``disk`` (the files API), ``runner(clock)`` (runs processes), ``pause()`` /
    ``resume()``, ``fork()`` and ``destroy()``; ``connect(port)`` opens a TCP connection to a
    server inside (preview URLs), ``ConnectionRefusedError`` when none listens;
    ``set_address(ip)`` is told the address the API reports for it, once, before anything
    else; ``set_shape(vcpus, memory_mib, cpu_percent)`` its shape (the process runtime's
    limits);
    ``set_egress(rules, meter)`` is told the sandbox's egress rules whenever they change;
    ``join_network(id, "ip/prefix")`` / ``leave_network(id)`` follow its account networks.
    ``set_agent(handler)``: what the in-guest agent's ``/self/pause`` and ``/self/delete``
    do (``handler(action, reason)``), where the runtime has an agent.
    ``connect``, ``set_egress`` and ``join_network`` raise ``FeatureUnavailable`` where the
    runtime cannot do it here (nothing changed).
    ``wait_clock(clock)`` is the clock that timeouts, grace periods and heartbeats of this
    sandbox's processes wait on: the fake's own for bashkit, real time for real processes.
``Runner``
    ``run(argv, cwd=, env=, stdin=, on_stdout=, on_stderr=, started=, terminal=, held_open=)``
    as ``Shell.run`` (``terminal``: the PTY's window, for a PTY process; ``held_open``: told
    why the run waits when the program exited but processes it left keep its output open,
    where the runtime can know), and
    ``signal(task, name, tree=)``: True when the runtime delivered a real signal (the owner then
    waits for the exit), False when the owner emulates it by cancelling the task.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import asyncio
    import socket

    from fake_server.clock import Clock
    from fake_server.runtime.pipes import StdinPipe
    from fake_server.runtime.terminal import Terminal

__all__ = [
    "RUNTIMES",
    "BucketMounts",
    "Disk",
    "FeatureUnavailable",
    "Machine",
    "Meter",
    "Runner",
    "Runtime",
    "RuntimeUnavailable",
    "Usage",
]

#: Runtime names a fake, a rootfs or a test may ask for.
RUNTIMES = ("bashkit", "process")

Sink = Callable[[bytes], Awaitable[None]]


class RuntimeUnavailable(RuntimeError):
    """The runtime asked for cannot run on this machine; the message says why and what to do."""


class FeatureUnavailable(Exception):
    """A sandbox's runtime cannot do what was asked on this machine; the message says why.

    The models answer it as the API documents for the feature (409 ``runtime_unsupported``,
    or 502 for a preview URL), never as a crash."""


class Disk(Protocol):
    """The files API of one sandbox (guest paths, confined to the sandbox)."""

    def read_file(self, path: str) -> bytes: ...
    def write_file(self, path: str, data: bytes, *, mode: int | None = None) -> None: ...
    def exists(self, path: str) -> bool: ...
    def is_dir(self, path: str) -> bool: ...
    def is_file(self, path: str) -> bool: ...
    def wipe(self) -> None: ...

    @property
    def wiped(self) -> bool: ...


class Runner(Protocol):
    """Runs the processes of one sandbox."""

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | StdinPipe | None = None,
        on_stdout: Sink,
        on_stderr: Sink,
        started: Callable[[], None] | None = None,
        terminal: Terminal | None = None,
        held_open: Callable[[str], None] | None = None,
    ) -> int: ...

    def sigterm_ignored(self, task: asyncio.Task[Any]) -> bool: ...

    def signal(self, task: asyncio.Task[Any], name: str, *, tree: bool) -> bool: ...


class Meter(Protocol):
    """A sandbox's bandwidth counters (``models.bandwidth.Bandwidth``)."""

    def sent(self, size: int) -> None: ...
    def received(self, size: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Usage:
    """What a sandbox's processes use now, measured by its runtime (``GET …/metrics``)."""

    cpu_seconds: float
    memory_bytes: int
    processes: int


class Machine(Protocol):
    """One sandbox as the runtime sees it."""

    runtime: str
    #: Where its processes start when no ``cwd`` is given (the process runtime's host layout,
    #: without the image, runs them as an unprivileged user with a home of its own).
    home: str

    @property
    def disk(self) -> Disk: ...

    def runner(self, clock: Clock) -> Runner: ...
    def wait_clock(self, clock: Clock) -> Clock: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def fork(self) -> Machine: ...
    def destroy(self) -> None: ...
    async def connect(self, port: int, *, loopback: bool = False) -> socket.socket:
        """A TCP connection to ``port``: on ``eth0`` (preview URLs), or on ``127.0.0.1``
        inside the sandbox (tunnels, which reach loopback-only servers too)."""

    def set_address(self, address: str) -> None: ...
    def set_agent(self, handler: Callable[[str, str], None]) -> None: ...
    def set_egress(self, rules: Sequence[str], meter: Callable[[], Meter]) -> None: ...
    def set_disk_size(self, disk_mib: int) -> None: ...
    def set_shape(self, vcpus: int, memory_mib: int, cpu_percent: int | None = None) -> None:
        """The shape's vCPUs, memory and CPU quota (percent of one CPU): limits where the
        runtime enforces them."""

    def join_network(self, network_id: str, address: str) -> None: ...
    def leave_network(self, network_id: str) -> None: ...
    def usage(self) -> Usage | None: ...


@runtime_checkable
class BucketMounts(Protocol):
    """A machine that mounts disk buckets itself (the process runtime: host directories bound
    into the sandbox); the bashkit runtime mounts shared in-memory filesystems instead."""

    def mount_bucket(self, bucket: str, mount_path: str, sub_path: str) -> None:
        """Mount ``bucket`` (an opaque name, the same for every disk on one bucket), or its
        ``sub_path`` folder, at ``mount_path``.

        ``FeatureUnavailable`` where this sandbox cannot mount; ``NotADirectoryError`` when
        ``sub_path`` names a file in the bucket; ``FileExistsError`` when ``mount_path``
        names a file in the sandbox."""
        ...

    def unmount_bucket(self, mount_path: str) -> None: ...


class Runtime(Protocol):
    name: str

    def new_sandbox(self, sandbox_id: str, disk_mib: int) -> Machine: ...
    def close(self) -> None: ...
