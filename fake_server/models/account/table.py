"""An account's sandbox table: its sandboxes, credit and resources, and the lookups every
operation needs. ``Account`` is this table with its operations; the services it holds
(``execs``, ``processes``, ``admin``, ``tokens``, ``metrics``) take the table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.models.errors import BadRequest, NotFound, at_capacity
from fake_server.models.paths import check_abs_path
from fake_server.models.transitions import ENDING

if TYPE_CHECKING:
    from fake_server.models.context import Context
    from fake_server.models.process import Process
    from fake_server.models.sandbox import Sandbox
    from fake_server.models.usage import UsageRecord

__all__ = ["SandboxTable", "check_abs_path"]


class SandboxTable:
    """One account (one API key): its sandboxes, credit and resources, and the lookups every
    operation needs (a sandbox that still exists, a running one, a process...)."""

    def __init__(self, *, account_id: str, api_key: str, ctx: Context) -> None:
        self.id = account_id
        self.api_key = api_key
        self.ctx = ctx
        self.sandboxes: dict[str, Sandbox] = {}
        from fake_server.models.account.credit import Credit

        #: Every sandbox this account made, kept after it is gone, for ``/v1/metrics``.
        self.usage_records: list[UsageRecord] = []
        #: The credit balance (unlimited unless a test sets it): 402 on cost-incurring calls.
        self.credit = Credit()
        from fake_server.models.resources.holdings import AccountResources

        #: Networks, disks, templates and desktops (``models.resources.holdings``).
        self.resources = AccountResources(ctx, self.sandbox)

    def sandbox(self, sandbox_id: str, *, read: bool = False) -> Sandbox:
        sandbox = self.sandboxes.get(sandbox_id)
        if sandbox is None:
            raise NotFound("sandbox not found", code="sandbox_not_found")
        sandbox.settle(read=read)
        if sandbox.gone():
            del self.sandboxes[sandbox_id]
            raise NotFound("sandbox not found", code="sandbox_not_found")
        return sandbox

    def live_names(self) -> set[str]:
        """Names of the sandboxes not yet destroyed: the service refuses a second one
        (langflow-sandbox-createos 0.2.0 ``find_by_name``, measured: "The control plane refuses
        duplicate names among non-terminal sandboxes"; docs/fidelity.md records the CLI's
        ``resolve.go`` saying otherwise)."""
        names = set()
        for sandbox in self.sandboxes.values():
            sandbox.settle()
            if sandbox.status not in ENDING:
                names.add(sandbox.name)
        return names

    def fresh_name(self) -> str:
        """A generated name no sandbox of the account has (words collide about once in 2**32)."""
        name = self.ctx.ids.name()
        while any(s.name == name for s in self.sandboxes.values()):  # pragma: no cover
            name = self.ctx.ids.name()
        return name

    def track_usage(self, sandbox: Sandbox) -> None:
        """Count ``sandbox`` in the account's usage metrics from now on, even once gone."""
        from fake_server.models.usage import UsageRecord

        shape = sandbox.shape
        self.usage_records.append(
            UsageRecord(sandbox.id, shape.vcpu, shape.mem_mib, sandbox.running, sandbox.bandwidth)
        )

    def require_credit(self) -> None:
        """402 when the account has no credit; cost-incurring calls check after the owner."""
        self.credit.require()

    def running(self, sandbox_id: str) -> Sandbox:
        sandbox = self.sandbox(sandbox_id)
        sandbox.require_running()
        sandbox.touch()
        return sandbox

    def room_for_a_command(self) -> None:
        """503 now, before anything starts, when no interpreter would fit (fd limit)."""
        from fake_server.runtime import CapacityError, check_capacity

        try:
            check_capacity()
        except CapacityError as exc:
            raise at_capacity(exc) from None

    def process(self, sandbox_id: str, process_id: str) -> Process:
        sandbox = self.running(sandbox_id)
        process = sandbox.processes.get(process_id)
        if process is None:
            raise NotFound("process not found", code="process_not_found")
        return process

    def env_for(self, sandbox: Sandbox, env: dict[str, str]) -> dict[str, str]:
        """Sandbox envs overridden by request env; only keys declared at create may be set."""
        undeclared = [key for key in env if key not in sandbox.envs]
        if undeclared:
            raise BadRequest("only env keys declared at sandbox creation may be set", field="env")
        if any("\x00" in value for value in env.values()):
            raise BadRequest("values must not contain NUL", field="env")
        return {**sandbox.envs, **env}

    def check_cwd(self, sandbox: Sandbox, cwd: str | None) -> str | None:
        if cwd is None:
            return None
        path = check_abs_path(cwd, "cwd")
        if not sandbox.disk.is_dir(path):
            raise BadRequest("directory does not exist", field="cwd")
        return path

    def held_open(self, sandbox_id: str, process_id: str | None, text: str) -> None:
        """The journal's note that a command's output stays open after its program exited
        (``runtime.process.sandbox.heldopen``): what a hung exec or connect says in a
        failing test."""
        from fake_server.models.journal.events import Event

        self.ctx.journal.record(
            Event(
                time=self.ctx.clock.now(),
                kind="process",
                account_id=self.id,
                sandbox_id=sandbox_id,
                process_id=process_id,
                detail=text,
            )
        )

    def forget_sandbox(self, sandbox_id: str) -> None:
        """Make a sandbox vanish (fault hook): its processes die, later requests get 404."""
        sandbox = self.sandboxes.pop(sandbox_id, None)
        if sandbox is not None:
            sandbox.cancel_timer()
            for process in sandbox.processes.values():
                process.crash("SIGKILL")
            sandbox.machine.destroy()
