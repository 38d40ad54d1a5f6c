"""How a sandbox booting the image is confined: its ids, its system calls, its view of /proc.

``Confinement`` holds what a runtime decided once (the sandboxes' host id range, the copy of
bwrap their init runs from, whether the seccomp filter can be made) and builds two command
lines:

``init_argv``
    The sandbox's init: ``nsenter`` puts it in the sandbox's network and mount namespaces and
    becomes the range's first id (the sandbox's root, an unprivileged id on the host) before
    bwrap makes the user namespace. bwrap waits (``--userns-block-fd``) until the fake has
    written the namespace's map (``idmap``: all 65,536 ids, as the host's ``newuidmap``
    would), then makes the PID, IPC and UTS namespaces, binds the sandbox's root, mounts
    ``/proc`` with the OCI runtimes' masked and read-only paths (``MASKED``, ``READ_ONLY``)
    and installs the seccomp filter (``seccomp``) before pid 1 runs.
``exec_prefix``
    Every exec and managed process: a bwrap run by the fake installs the same filter, then
    ``nsenter`` enters the init's namespaces (user namespace included) as root inside.

Both run bwrap with ``no_new_privs`` (bwrap always sets it), so a setuid program inside gains
nothing: root inside is the highest a sandbox's process gets, as ``sudo`` would give anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.runtime.process.containment import idmap, seccomp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fake_server.runtime.process.containment.idmap import (
        Extents,
        IdRange,
        Nested,
        OwnId,
        Subordinate,
    )

__all__ = ["MASKED", "READ_ONLY", "Confinement", "Handoff", "describe", "mask_argv"]

#: Paths of ``/proc`` a sandbox sees empty, as OCI runtimes mask them: the host's memory, its
#: kernel keys, timers and scheduler internals, its hardware.
MASKED = (
    "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
    "/proc/sched_debug", "/proc/acpi", "/proc/asound", "/proc/scsi",
)  # fmt: skip
#: Paths of ``/proc`` a sandbox may read but never write (the kernel's knobs).
READ_ONLY = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")


def describe(
    ids: IdRange | None,
    layout: IdRange | Subordinate | OwnId | None = None,
    rootless: Extents | None = None,
) -> str:
    """``serve``'s start-up line about how sandboxes are confined: with ``ids`` the image's,
    with ``rootless`` the image's unprivileged (``userroot``), else the host-directory
    layout's with its map (``idmap.layout_map``)."""
    why = seccomp.available()
    syscalls = "a seccomp filter" if why is None else f"no seccomp filter ({why})"
    if rootless is not None:
        (_, uid, _), *others = rootless.uid
        if others:
            (_, first, count) = others[0]
            mapped = f"the sandbox's other ids your subordinate ids {first}-{first + count - 1}"
        else:
            mapped = "and the only id (no subordinate ids: chown does nothing, apt runs as root)"
        return (
            f"containment: root inside is your own id {uid} on the host, {mapped}; /proc "
            f"masked, {syscalls}; no disk size per sandbox (not root: no loop device)"
        )
    if ids is None:
        if layout is None:
            mapped = "user sandbox is the caller's own id on the host"
            syscalls = "no seccomp filter"
        elif isinstance(layout, idmap.IdRange):
            mapped = layout.describe_layout()
        else:
            mapped = layout.describe()
        return (
            f"containment: {mapped}; /proc masked, {syscalls}; no disk size per sandbox (the "
            "host-directory layout)"
        )
    last = ids.base + ids.size - 1
    root = f"root inside is host id {ids.base} (ids up to {last})"
    return f"containment: {root}, /proc masked, {syscalls}"


def mask_argv() -> list[str]:
    """bwrap's options masking ``MASKED`` and protecting ``READ_ONLY`` (after ``--proc``);
    paths this kernel lacks are left out."""
    argv: list[str] = []
    for path in MASKED:
        if os.path.isdir(path):
            argv += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            argv += ["--ro-bind", "/dev/null", path]
    for path in READ_ONLY:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    return argv


@dataclass(frozen=True, slots=True)
class Handoff:
    """Descriptors the init's bwrap gets: it waits on ``block`` until the fake has mapped its
    user namespace, reports its child's pid on ``info``, reads the filter from ``filter``."""

    block: int
    info: int
    #: ``-1`` where the filter cannot be made here (``seccomp.available()`` says why).
    filter: int

    @property
    def fds(self) -> tuple[int, ...]:
        return tuple(fd for fd in (self.block, self.info, self.filter) if fd >= 0)


@dataclass(frozen=True, slots=True)
class Confinement:
    """The confinement of one runtime's image sandboxes."""

    #: ``None``: an unprivileged fake's (``userroot``): the init's bwrap runs as root of the
    #: user namespace the sandbox's is made in, where the sandbox's ids are mapped already.
    ids: IdRange | None
    #: bwrap as the range's first id can run it (``bwrap.reachable_copy``).
    init_bwrap: str
    #: bwrap as the fake runs it (the exec wrapper).
    bwrap: str
    #: bwrap's options binding files over ``/proc``'s (``procview``: the shape's figures).
    proc_binds: tuple[str, ...] = ()
    #: The sandbox's root is the only id mapped (``Extents.own_id``): the filter answers
    #: ``chown`` with success (``seccomp``), so dpkg can unpack packages.
    ignore_chown: bool = False

    def init_argv(
        self,
        enter: list[str],
        root: str,
        env: Mapping[str, str],
        handoff: Handoff,
        *,
        own_net: bool,
    ) -> list[str]:
        """The init's command line, up to its program: ``enter`` are ``nsenter``'s options
        joining the sandbox's mount namespace and its network namespace, or, with
        ``own_net``, bwrap makes one of its own (loopback only)."""
        owner = self.ids.base if self.ids is not None else 0
        argv = [
            "--unshare-user", "--userns-block-fd", str(handoff.block),
            "--info-fd", str(handoff.info), "--uid", "0", "--gid", "0",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            *(["--unshare-net"] if own_net else []), "--hostname", "sandbox",
            "--die-with-parent",
            *(["--seccomp", str(handoff.filter)] if handoff.filter >= 0 else []),
            "--bind", root, "/", "--proc", "/proc", *mask_argv(), *self.proc_binds,
            "--dev", "/dev", "--clearenv",
        ]  # fmt: skip
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += ["--chdir", "/", "--as-pid-1", "--"]
        return [*enter, f"--setuid={owner}", f"--setgid={owner}", "--", self.init_bwrap, *argv]

    def exec_prefix(self, filter_fd: int) -> list[str]:
        """What runs before ``nsenter`` for an exec: bwrap installing the filter read from
        ``filter_fd`` (every file system stays as it is; ``nsenter`` then changes them)."""
        return [self.bwrap, "--seccomp", str(filter_fd), "--bind", "/", "/", "--"]


def handoff(*, with_filter: bool = True, ignore_chown: bool = False) -> tuple[Handoff, int, int]:
    """A ``Handoff`` for the child, and the fake's ends: the block pipe's write end and the
    info pipe's read end (``with_filter``: the seccomp filter too, where it can be made, with
    its ``chown`` rules ``ignore_chown``)."""
    block_read, block_write = os.pipe()
    info_read, info_write = os.pipe()
    try:
        wanted = with_filter and seccomp.available() is None
        program = seccomp.program_fd(ignore_chown=ignore_chown) if wanted else -1
    except BaseException:
        for fd in (block_read, block_write, info_read, info_write):
            os.close(fd)
        raise
    return Handoff(block_read, info_write, program), block_write, info_read


async def map_when_ready(
    info: int, block: int, ids: IdRange | Subordinate | OwnId | Nested
) -> None:
    """Read the init's child pid from ``info``, give its user namespace ``ids``, let it go on
    (``block``). Both descriptors are closed. ``OSError`` when bwrap failed before, or the
    map could not be written."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=4096, loop=loop)
    try:
        with os.fdopen(info, "rb", buffering=0) as handle:
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), handle
            )
            try:
                text = await reader.readuntil(b"}")
            except asyncio.IncompleteReadError:
                raise OSError("the sandbox's init did not start (bwrap failed)") from None
            finally:
                transport.close()
        pid = int(json.loads(text)["child-pid"])
        if isinstance(ids, idmap.Subordinate | idmap.Nested):  # helpers, off the event loop
            await asyncio.to_thread(idmap.map_user_namespace, pid, ids)
        else:
            idmap.map_user_namespace(pid, ids)
        os.write(block, b"1")
    finally:
        with contextlib.suppress(OSError):
            os.close(block)
