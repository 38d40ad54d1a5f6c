"""Account operations on managed processes."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from fake_server.models.errors import (
    BadRequest,
    Conflict,
    Gone,
    NotImplementedByFake,
    RequestTimeout,
)
from fake_server.models.process import KNOWN_SIGNALS, Process, ProcessSpec

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from fake_server.models.account.table import SandboxTable
    from fake_server.models.process import Frame
    from fake_server.models.sandbox import Sandbox

__all__ = ["MAX_WAIT_MS", "Processes"]

MAX_WAIT_MS = 600_000
MAX_GRACE_MS = 600_000
#: ``TERM`` of a shell (``…/shell``, ``…/shell-ws``) unless the sandbox's ``envs`` set one: the
#: CLI relays its own terminal's bytes and sends no ``TERM``; xterm's 256-colour entry is what
#: the terminals it runs in answer to (no public source shows the service's value).
SHELL_TERM = "xterm-256color"
PTY_UNSUPPORTED = (
    "a PTY on the fake's process runtime needs util-linux setsid in /usr, not found here; "
    "install util-linux or create this sandbox on the bashkit runtime for a PTY"
)


class Processes:
    """Managed processes of an account's sandboxes (``account.processes``): create, list, get,
    connect, input, stdin close, resize, signal, wait, kill; shells and tunnels find theirs
    here. A service over the account's table."""

    def __init__(self, account: SandboxTable) -> None:
        self.account = account

    def create_process(
        self, sandbox_id: str, spec: ProcessSpec, *, term: str | None = None
    ) -> Process:
        """``term``: the ``TERM`` it gets when the sandbox's environment names none."""
        from fake_server.runtime import StdinPipe

        sandbox = self.account.running(sandbox_id)
        if spec.pty and not sandbox.machine.can_open_pty():
            raise NotImplementedByFake(PTY_UNSUPPORTED, code="not_implemented")
        env = self.account.env_for(sandbox, dict(spec.env))
        if term is not None:
            env.setdefault("TERM", term)
        cwd = self.account.check_cwd(sandbox, spec.cwd)
        self.account.room_for_a_command()
        ids = self.account.ctx.ids
        process_id = ids.process_id()
        process = Process(
            process_id=process_id,
            pid=ids.pid(),
            spec=ProcessSpec(spec.cmd, spec.args, cwd, spec.env, spec.pty),
            created_at=self.account.ctx.clock.time(),
            clock=sandbox.machine.wait_clock(self.account.ctx.clock),
            stdin=StdinPipe(),
            home=sandbox.machine.home,
            on_error=lambda trace: self.account.ctx.errors.append(("create_process", trace)),
            on_held_open=functools.partial(self.account.held_open, sandbox.id, process_id),
        )
        sandbox.processes[process.process_id] = process
        process.start(sandbox.machine.runner(self.account.ctx.clock), env)
        return process

    def open_shell(self, sandbox_id: str, rows: int, cols: int) -> Process:
        """A login shell on a PTY (``…/shell-ws``, ``…/shell``): a managed PTY process."""
        for name, value in (("rows", rows), ("cols", cols)):
            if not 1 <= value <= 1000:
                raise BadRequest("must be between 1 and 1000", field=name)
        spec = ProcessSpec("/bin/bash", ("-l",), pty=(rows, cols))
        return self.create_process(sandbox_id, spec, term=SHELL_TERM)

    def tunnel_target(self, sandbox_id: str, port: int) -> Sandbox:
        """The running sandbox a ``…/tunnel/{port}`` connection goes into (404, 409 first)."""
        if not 1 <= port <= 65535:
            raise BadRequest("must be a port between 1 and 65535", field="port")
        return self.account.running(sandbox_id)

    def list_processes(self, sandbox_id: str) -> list[Process]:
        return list(self.account.running(sandbox_id).processes.values())

    def get_process(self, sandbox_id: str, process_id: str) -> Process:
        return self.account.process(sandbox_id, process_id)

    def connect_process(
        self, sandbox_id: str, process_id: str, after: int
    ) -> AsyncGenerator[Frame, None]:
        process = self.account.process(sandbox_id, process_id)
        if after < 0:
            raise BadRequest("must be >= 0", field="after")
        if after > process.output.newest_seq:
            raise BadRequest("is beyond the newest output", field="after")
        if process.output.expired(after):
            raise Gone("requested output was evicted")
        return process.follow(after, self.account.ctx.heartbeat_interval)

    def write_process_input(self, sandbox_id: str, process_id: str, data: bytes) -> int:
        return self.account.process(sandbox_id, process_id).write_input(data)

    def resize_process(self, sandbox_id: str, process_id: str, rows: int, cols: int) -> Process:
        """Change a PTY's window size; a plain process has no terminal to resize."""
        process = self.account.process(sandbox_id, process_id)
        if process.kind != "pty":
            raise Conflict("only a pty process has a window size", code="not_a_pty")
        for name, value in (("rows", rows), ("cols", cols)):
            if not 1 <= value <= 1000:
                raise BadRequest("must be between 1 and 1000", field=name)
        process.resize(rows, cols)
        return process

    def close_process_stdin(self, sandbox_id: str, process_id: str) -> Process:
        process = self.account.process(sandbox_id, process_id)
        process.close_stdin()
        return process

    async def signal_process(self, sandbox_id: str, process_id: str, signal: str) -> Process:
        process = self.account.process(sandbox_id, process_id)
        if signal not in KNOWN_SIGNALS:
            raise BadRequest("unknown signal", field="signal")
        await process.send_signal(signal)
        return process

    async def wait_process(
        self, sandbox_id: str, process_id: str, *, scope: str, timeout_ms: int
    ) -> Process:
        process = self.account.process(sandbox_id, process_id)
        if scope not in ("tree", "leader"):
            raise BadRequest("must be tree or leader", field="scope")
        if not 0 <= timeout_ms <= MAX_WAIT_MS:
            raise BadRequest(f"must be between 0 and {MAX_WAIT_MS}", field="timeout_ms")
        if not await process.wait_exit(timeout_ms / 1000):
            raise RequestTimeout("process is still running", code="wait_timeout")
        return process

    async def kill_process(self, sandbox_id: str, process_id: str, *, grace_ms: int) -> Process:
        process = self.account.process(sandbox_id, process_id)
        if not 0 <= grace_ms <= MAX_GRACE_MS:
            raise BadRequest(f"must be between 0 and {MAX_GRACE_MS}", field="grace_ms")
        await process.kill(grace_ms / 1000)
        return process
