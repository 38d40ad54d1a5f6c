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
``Builder`` / ``Image``
    A template build (``Runtime.builder(base)``): its ``RUN`` steps run on the base image
    (``run_step(builder.step_runner(), script, ...)``),
    ``finish()`` keeps the result as an ``Image`` that ``new_sandbox(..., image=)`` starts from.
``SharedBucket`` / ``SharedMounts``
    Disk buckets the fake holds in memory (bashkit's), mounted by machines that take them;
    ``BucketMounts``: a machine that mounts host directories itself (the process runtime).
``FileKeeper`` / ``Blobs``
    ``serve --state-dir``: how a runtime whose files live in memory has them saved as
    snapshots (``Runtime.keeper()``; ``None`` where machines keep their files on disk and a
    restart ``adopt``s them from what ``Machine.saved()`` said).

Persistence and the models use nothing else of a runtime; ``choice`` composes them, so a new
runtime is a folder here and a line there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import asyncio
    import socket
    from pathlib import Path

    from fake_server.clock import Clock
    from fake_server.runtime.pipes import StdinPipe
    from fake_server.runtime.terminal import Terminal

__all__ = [
    "RUNTIMES",
    "Blobs",
    "BucketMounts",
    "Builder",
    "Commands",
    "Disk",
    "FeatureUnavailable",
    "FileKeeper",
    "Image",
    "Machine",
    "Meter",
    "Runner",
    "Runtime",
    "RuntimeUnavailable",
    "SharedBucket",
    "SharedMounts",
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
    async def fork_async(self) -> Machine:
        """``fork()``, its copy of the files made off the event loop where it takes time."""

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
    def can_open_pty(self) -> bool:
        """Whether a PTY process can start here (the process runtime needs ``setsid``)."""
        ...

    def saved(self) -> dict[str, Any]:
        """What ``serve --state-dir`` records to ``adopt`` this machine after a restart
        (``{"directory": name}`` for a machine kept on disk, ``None`` for one in memory)."""
        ...


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


class Commands(Protocol):
    """Python commands a test adds to sandboxes (``fake.commands``; the bashkit runtime's)."""

    def names(self) -> list[str]: ...


class Image(Protocol):
    """A template's built files, kept by the runtime that built them (``Builder.finish``)."""

    #: The runtime that built it: sandboxes created from it run there.
    runtime: str
    #: Bytes its files take (the template's ``size``).
    size: int

    def saved(self) -> dict[str, Any] | None:
        """What ``serve --state-dir`` records to bring it back (``None``: its files are
        saved as a snapshot through the runtime's ``FileKeeper``)."""
        ...

    def discard(self) -> None: ...


class Builder(Protocol):
    """One template build on a base image (``Runtime.builder``); the Dockerfile's meaning
    (which steps run, ``ENV``, ``WORKDIR``) is the models' business."""

    #: Whether the steps take real time (the build goes on after the create answered) rather
    #: than run on the fake's clock.
    background: bool

    def step_runner(self) -> Runner:
        """A runner over the build's files for the next ``RUN`` step (``run_step``)."""
        ...

    def make_dir(self, path: str) -> None: ...
    async def finish(self) -> Image:
        """The build's result, kept (a copy of many files made off the event loop); the
        builder is done."""
        ...

    def discard(self) -> None:
        """Drop what the build made (a failed build)."""
        ...


async def run_step(
    runner: Runner,
    script: str,
    *,
    cwd: str,
    env: Mapping[str, str],
    on_output: Sink,
    started: Callable[[], None] | None = None,
) -> int:
    """Run one template ``RUN`` step (``bash -c script``, both streams into ``on_output``) on a
    build's runner and return its exit status; ``ProcessSignal`` when it was killed.
    ``started``: as ``Runner.run``'s. One function, so both runtimes run a step alike."""
    return await runner.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=dict(env),
        on_stdout=on_output,
        on_stderr=on_output,
        started=started,
    )


class SharedBucket(Protocol):
    """One disk bucket's files held in the fake's memory, shared by every machine mounting it."""

    @property
    def parts(self) -> dict[str, Any]: ...


@runtime_checkable
class SharedMounts(Protocol):
    """A machine that mounts ``SharedBucket``s (bashkit's in-memory disks)."""

    def mount_shared(self, bucket: SharedBucket, mount_path: str, sub_path: str) -> None:
        """``OSError`` or ``RuntimeError`` when ``sub_path`` names a file in the bucket."""
        ...

    def unmount_shared(self, bucket: SharedBucket, mount_path: str) -> None: ...


class Blobs(Protocol):
    """File contents by digest, where ``serve --state-dir`` keeps them."""

    def put(self, data: bytes) -> str: ...
    def get(self, digest: str) -> bytes: ...


#: A snapshot of a file tree as a ``FileKeeper`` writes it: JSON-ready, opaque to the rest.
Snapshot = list[list[Any]]


class FileKeeper(Protocol):
    """Snapshots of a runtime's in-memory file trees for ``serve --state-dir``: persistence
    stores each one by owner and hands it back; what a tree and a snapshot hold is the
    runtime's (bashkit: ``runtime/bashkit/manifests``)."""

    def files(self, machine: Machine) -> Any | None:
        """The machine's file tree to snapshot; ``None`` when this keeper does not keep it
        (another runtime's) or it is still exactly as restored (never loaded since)."""
        ...

    def image_files(self, image: Image) -> Any | None: ...
    def bucket_files(self, bucket: SharedBucket) -> dict[str, Any]: ...
    def fresh(self, blobs: Blobs) -> Snapshot:
        """The snapshot of a new machine's files (the image sandboxes start from)."""
        ...

    def snapshot(
        self,
        files: Any,
        blobs: Blobs,
        previous: Snapshot | None = None,
        *,
        copied_from: Snapshot | None = None,
        copied_before: float = ...,
    ) -> Snapshot: ...
    def unchanged(self, files: Any, snapshot: Snapshot) -> bool: ...
    def same_files(self, one: Snapshot, other: Snapshot) -> bool: ...
    def references(self, snapshots: Iterable[Snapshot]) -> set[str]:
        """Every blob the snapshots name (the rest may go)."""
        ...

    def restore(self, files: Any, snapshot: Snapshot, read: Callable[[str], bytes]) -> None: ...
    def adopt(self, fill: Callable[[Any, Callable[[], None]], None]) -> Machine:
        """A restored machine whose files ``fill(files, install_image)`` puts in place on
        first use (``install_image()``: the files of a machine never written)."""
        ...

    def empty_files(self) -> Any: ...
    def restored_bucket(self, parts: dict[str, Any]) -> SharedBucket: ...
    def restored_image(self, files: Callable[[Any], None]) -> Image: ...


class Runtime(Protocol):
    name: str

    def new_sandbox(
        self, sandbox_id: str, disk_mib: int, *, image: Image | None = None, rootfs: str = ...
    ) -> Machine:
        """A new sandbox of ``rootfs`` (a catalog name): the base image's files, or
        ``image``'s (a template this runtime built) over them."""
        ...

    def builder(self, base: str, clock: Clock, commands: Commands) -> Builder:
        """A template build on ``base`` (a catalog rootfs). ``RuntimeUnavailable`` where it
        cannot run here."""
        ...

    def keep_in(self, path: Path, buckets: Path | None) -> None:
        """Keep machines' files in ``path`` and disk buckets in ``buckets`` (both outlive the
        fake: ``serve --state-dir``); nothing where they live in memory."""
        ...

    def adopt(self, saved: Mapping[str, Any]) -> Machine:
        """The machine ``Machine.saved()`` described, after a restart (kept on disk)."""
        ...

    def adopt_image(self, saved: Mapping[str, Any]) -> Image:
        """The image ``Image.saved()`` described, after a restart."""
        ...

    def keeper(self) -> FileKeeper | None:
        """How this runtime's in-memory files are saved; ``None``: its machines keep theirs."""
        ...

    def kill_processes(self) -> None:
        """Kill every process now, keeping every file (a stop begins)."""
        ...

    def clear_buckets(self) -> None:
        """Empty every disk bucket this runtime keeps itself (a reset)."""
        ...

    def close(self) -> None: ...
