"""Running one command of a process-runtime sandbox: ``nsenter`` into its init's namespaces
(``guest``; the command lines are ``cmdline``'s), on pipes (``spawn`` starts it and moves the
bytes) or a PTY (``pty``); the live process, its signals and exit status are a ``Run``
(``run``)."""

from __future__ import annotations

import asyncio
import errno
import os
import posixpath
import signal as signals
from typing import TYPE_CHECKING, Any

from fake_server.runtime.argv import check_argv, check_env
from fake_server.runtime.environment import BASE_ENV
from fake_server.runtime.process.containment import idmap, seccomp
from fake_server.runtime.process.net.netns import nsenter_path
from fake_server.runtime.process.sandbox import pty, tree
from fake_server.runtime.process.sandbox.cmdline import (
    LAYOUT_MOUNT,
    UID,
    USER,
    USER_HOME,
    bwrap_argv,
    enter_argv,
)
from fake_server.runtime.process.sandbox.guest import INIT
from fake_server.runtime.process.sandbox.heldopen import drain
from fake_server.runtime.process.sandbox.realwait import Running
from fake_server.runtime.process.sandbox.run import Run, exit_status
from fake_server.runtime.process.sandbox.spawn import feed, pump, reap, spawn
from fake_server.runtime.startfail import CommandNotStarted, HeldStart, start_failure

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence
    from pathlib import Path

    from fake_server.clock import Clock
    from fake_server.runtime.api import Sink
    from fake_server.runtime.pipes import StdinPipe
    from fake_server.runtime.process.containment.cgroups import SandboxGroup
    from fake_server.runtime.process.containment.confine import Confinement, Handoff
    from fake_server.runtime.process.containment.idmap import IdRange, OwnId, Subordinate
    from fake_server.runtime.process.net.netns import NetNamespace
    from fake_server.runtime.process.net.usernet import UserNet
    from fake_server.runtime.process.sandbox.guest import Guest
    from fake_server.runtime.process.storage.dirdisk import DirDisk
    from fake_server.runtime.process.storage.userroot import Root
    from fake_server.runtime.terminal import Terminal

__all__ = ["Runner", "tree_signal"]

#: How ``nsenter`` says it could not start the command (``_NotFound``).
_NOT_FOUND = b"nsenter: failed to execute "


class Runner:
    """Runs processes of one sandbox; ``runs`` is shared with its machine (pause, destroy).

    ``net`` is the sandbox's network namespace, ``None`` when its init has one of its own;
    ``guest`` its init, whose namespaces every process enters; ``cgroup`` its limits."""

    def __init__(
        self,
        bwrap: str,
        root: Path,
        disk: DirDisk,
        runs: dict[Any, Run],
        net: NetNamespace | None,
        extra_env: Callable[[], Awaitable[dict[str, str]]],
        paused: Callable[[], bool] = lambda: False,
        *,
        guest: Guest,
        rootfs: Root | None = None,
        cgroup: SandboxGroup | None = None,
        stopping: Callable[[], bool] = lambda: False,
        confinement: Confinement | None = None,
        clock: Clock | None = None,
        layout_map: IdRange | Subordinate | OwnId | None = None,
        layout_mount: str | None = None,
        usernet: UserNet | None = None,
    ) -> None:
        """``confinement``: how an image sandbox is confined (its ids, seccomp, masks);
        ``layout_map``: the map of a sandbox on the host-directory layout
        (``idmap.layout_map``; as root, ``bwrap`` must be a copy the range's ids can run,
        and ``layout_mount`` the mount namespace with the root at ``LAYOUT_MOUNT``)."""
        self._bwrap = bwrap
        self._confinement = confinement if rootfs is not None else None
        self._layout_map = layout_map if rootfs is None else None
        self._layout_mount = layout_mount
        #: The fake's clock, which follows real time while a program of this runner runs.
        self._clock = clock
        #: Whether the fake is stopping: a run registered from now on is killed at once.
        self._stopping = stopping
        #: The sandbox's process limit, which every process joins before it runs.
        self._cgroup = cgroup
        self._guest = guest
        #: The sandbox's own root file system (the image); ``None``: the host-directory layout.
        self._rootfs = rootfs
        self._net = net
        #: Unprivileged, the namespaces the sandbox's are made in (``usernet``), if any.
        self._usernet = usernet
        self._extra_env = extra_env
        self._root = root
        self._disk = disk
        self._runs = runs
        self._paused = paused
        #: Signals sent while bwrap is being started, delivered once it has (never lost).
        self._early: dict[Any, list[tuple[int, bool]]] = {}

    def sigterm_ignored(self, task: asyncio.Task[Any]) -> bool:
        return False

    def signal(self, task: asyncio.Task[Any], name: str, *, tree: bool) -> bool:
        """Deliver ``name`` to the process in ``task``; False when it has not started yet."""
        run = self._runs.get(task)
        if run is not None:
            run.signal(tree_signal(name), tree_scope=tree)
            return True
        if task in self._early:
            self._early[task].append((tree_signal(name), tree))
            return True
        return False

    def _register(self, task: Any, run: Run) -> Run:
        """``run`` is live: signals sent while it started reach it now, and the fake's clock
        follows real time while it runs."""
        run.running = Running(self._clock)
        run.running.start()
        self._runs[task] = run
        for signum, tree_scope in self._early.pop(task, []):
            run.signal(signum, tree_scope=tree_scope)
        if self._stopping():  # the stop's kill came while bwrap started: it reaches this too
            run.signal(signals.SIGKILL, tree_scope=True)
        elif self._paused():  # paused while bwrap started: stop the tree once it runs
            run.stop(signals.SIGSTOP)
        return run

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
    ) -> int:
        """Run ``argv`` in the sandbox; the exit status, or ``ProcessSignal`` when a signal the
        API sent ended it. Raises ``FileNotFoundError`` for a missing working directory.

        ``started`` is called once the program runs, and so the fake's clock follows real
        time (a caller's hold may go then), or at the end when it never ran. ``held_open`` is
        told, once, when the program exited but processes it left keep its output open
        (``heldopen``)."""
        self._early[asyncio.current_task()] = []
        try:
            return await self._run(
                argv, cwd, env, stdin, on_stdout, on_stderr, terminal, started, held_open
            )
        finally:
            self._early.pop(asyncio.current_task(), None)
            if started is not None:
                started()

    async def _run(
        self,
        argv: Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: bytes | StdinPipe | None,
        on_stdout: Sink,
        on_stderr: Sink,
        terminal: Terminal | None = None,
        started: Callable[[], None] | None = None,
        held_open: Callable[[str], None] | None = None,
    ) -> int:
        args = check_argv(argv)
        image = self._rootfs is not None
        home = BASE_ENV["HOME"] if image else USER_HOME
        workdir = posixpath.normpath(cwd) if cwd else home
        if not self._disk.is_dir(workdir):
            code = errno.ENOTDIR if self._disk.exists(workdir) else errno.ENOENT
            raise FileNotFoundError(code, "the working directory does not exist")
        name = BASE_ENV["USER"] if image else USER
        user = {"HOME": home, "USER": name, "LOGNAME": name}
        environment = {**BASE_ENV, **user, **await self._extra_env(), **check_env(env or {})}
        confinement = self._confinement
        usernet = self._usernet
        # the sandbox's root is the only id: the filter's ``chown`` rules (``seccomp``)
        ignore_chown = confinement is not None and confinement.ignore_chown
        init = await self._guest.start(
            self._init_argv,
            usernet.nested
            if usernet is not None
            else self._layout_map
            if confinement is None
            else confinement.ids,
            with_filter=confinement is not None or self._layout_map is not None,
            ignore_chown=ignore_chown,
        )
        own_id = isinstance(self._layout_map, idmap.OwnId) or (
            usernet is not None and usernet.nested.keep
        )
        via = usernet.enter() if usernet is not None else ()
        prefix = enter_argv(
            nsenter_path(), init, workdir, uid=0 if image else UID, own_id=own_id, via=via
        )
        passed: tuple[int, ...] = ()
        preexec = None
        if seccomp.available() is None:
            if confinement is not None and usernet is None:  # handed over to the spawn
                passed = (seccomp.program_fd(),)
                prefix = [*confinement.exec_prefix(passed[0]), *prefix]
            elif self._layout_map is not None or usernet is not None:
                preexec = seccomp.installer(ignore_chown=ignore_chown)  # installed by the spawn
        wrappers = 1 if passed else 0  # the bwrap installing the filter
        if self._cgroup is not None:
            prefix = self._cgroup.wrap(prefix)
        if terminal is not None:
            root = f"/proc/{init}/root"  # the PTY in the sandbox's own devpts
            return await self._run_on_pty(
                prefix, args, terminal, stdin, on_stdout, environment, passed, root, started,
                preexec,
            )  # fmt: skip
        proc, pipes = await spawn(
            [*prefix, *args],
            piped=stdin is not None,
            env=environment,
            pass_fds=passed,
            preexec=preexec,
        )
        task = asyncio.current_task()
        run = self._register(
            task,
            Run(proc.pid, pipes=pipes.inodes, sandbox=self._guest.processes, wrappers=wrappers),
        )
        if started is not None:
            started()
        missing = _NotFound(args[0], on_stderr)
        pumps = [
            asyncio.ensure_future(pump(pipes.stdout, on_stdout)),
            asyncio.ensure_future(pump(pipes.stderr, missing, missing.flush)),
        ]
        if proc.stdin is not None:
            pumps.append(asyncio.ensure_future(feed(proc.stdin, stdin)))
        try:
            code = await proc.wait()
            # Until every holder of the pipes closed them; who, if it takes a while.
            await drain(pumps[:2], (args[0], code), run.holders, held_open)
        except asyncio.CancelledError:
            run.signal(signals.SIGKILL, tree_scope=True)
            await reap(proc, pumps)
            raise
        finally:
            self._runs.pop(task, None)
            run.running.stop()
            for piping in pumps:
                piping.cancel()
            pipes.close()
        not_started = missing.failure(code)
        if not_started is not None:
            raise not_started
        return exit_status(code, run, missing.seen)

    def _init_argv(self, handoff: Handoff | None) -> list[str]:
        """The command line of the sandbox's init (``guest``)."""
        image = self._rootfs is not None
        root = self._rootfs.root if self._rootfs is not None else self._root
        if self._confinement is not None and self._rootfs is not None and handoff is not None:
            via = self._usernet.options() if self._usernet is not None else self._net_enter()
            enter = [nsenter_path(), *via, *self._rootfs.enter_args()]
            env = {"PATH": BASE_ENV["PATH"]}
            command = self._confinement.init_argv(
                enter, str(root), env, handoff, own_net=self._net is None and self._usernet is None
            )
            argv = [*command, "/bin/sh"]
            argv += ["-c", INIT]
            return argv if self._cgroup is None else self._cgroup.wrap(argv)
        ranged = self._layout_map if isinstance(self._layout_map, idmap.IdRange) else None
        enter = self._net_enter()
        if ranged is not None and self._layout_mount is not None:
            root, enter = LAYOUT_MOUNT, [*enter, f"--mount={self._layout_mount}"]
        command = bwrap_argv(
            self._bwrap, root, "/", {"PATH": BASE_ENV["PATH"]},
            own_net=self._net is None and self._usernet is None, image=image, init=True,
            handoff=handoff,
        )  # fmt: skip
        if self._rootfs is not None:
            enter += self._rootfs.enter_args()
        prefix = [nsenter_path(), *enter, "--"] if enter else []
        if self._usernet is not None:  # bwrap as root of H, in N: the sandbox's S is H's child
            prefix = self._usernet.enter()
        if ranged is not None:  # bwrap as the range's first id, root in the namespace it makes
            ids = [f"--setuid={ranged.base}", f"--setgid={ranged.base}"]
            prefix = [nsenter_path(), *enter, *ids, "--"]
        argv = [*prefix, *command, "/bin/sh", "-c", INIT]
        return argv if self._cgroup is None else self._cgroup.wrap(argv)

    def _net_enter(self) -> list[str]:
        """``nsenter``'s option joining the sandbox's network namespace (none: its own)."""
        return [] if self._net is None else [f"--net={self._net.path}"]

    async def _run_on_pty(
        self,
        prefix: list[str],
        args: list[str],
        terminal: Terminal,
        stdin: bytes | StdinPipe | None,
        sink: Sink,
        env: dict[str, str],
        pass_fds: Sequence[int] = (),
        root: str | None = None,
        started: Callable[[], None] | None = None,
        preexec: Callable[[], None] | None = None,
    ) -> int:
        """``args`` as the session leader of a real PTY (``pty.run_on_pty``) made in the
        devpts under ``root`` (the sandbox init's); ``preexec``: the seccomp filter's
        installer, where the spawn installs it."""
        task = asyncio.current_task()
        tracked: list[Run] = []

        def track(pid: int) -> Run:
            tracked.append(self._register(task, Run(pid, wrappers=1 if pass_fds else 0)))
            if started is not None:
                started()
            return tracked[-1]

        if pty.SETSID is None:
            for fd in pass_fds:
                os.close(fd)
            raise RuntimeError("a PTY on the process runtime needs util-linux setsid in /usr")
        command = [*prefix, pty.SETSID, "-cw", *args]
        try:
            code, run = await pty.run_on_pty(
                command, terminal, stdin, sink, track, env, pass_fds, root, preexec
            )
        finally:
            self._runs.pop(task, None)
            for each in tracked:
                each.running.stop()
        return exit_status(code, run, False)


class _NotFound(HeldStart):
    """Keeps ``nsenter``'s ``execvp`` failure off stderr and reads its reason (``strerror``):
    the command could not start, which the exec reports as its ``error`` (``startfail``).

    nsenter writes its message in pieces: the start of stderr is held back while it may still
    be that message (only while it is a prefix of it, so a program's own output is not).
    """

    def __init__(self, program: str, sink: Sink) -> None:
        super().__init__(program, sink)
        self.seen = False
        #: Why the command did not start (``No such file or directory``), once seen.
        self.reason = ""

    def _examine(self, held: bytes) -> bytes | None:
        if len(held) < len(_NOT_FOUND) and _NOT_FOUND.startswith(held):
            return None
        if held.startswith(_NOT_FOUND):
            end = held.find(b"\n")
            if end < 0:
                return None
            self.seen = True
            self.reason = held[:end].decode(errors="replace").rpartition(": ")[2]
            held = held[end + 1 :]
        return held

    def failure(self, code: int) -> CommandNotStarted | None:
        """What the command's start failure reports, if nsenter could not start it."""
        if not self.seen or code not in (1, 126, 127):
            return None
        return start_failure(self._program, self.reason)


def tree_signal(name: str) -> int:
    try:
        return tree.SIGNALS[name]
    except KeyError:
        raise ValueError(f"unknown signal {name!r}") from None
