"""The account backend (one per API key) and the world that holds every account."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.models.account.account import AccountBase
from fake_server.models.account.admin import MAX_DISK_MIB, AdminOps, check_auto_pause
from fake_server.models.account.envs import check_envs
from fake_server.models.account.execs import ExecOps
from fake_server.models.account.metrics import MetricsOps
from fake_server.models.account.processes import ProcessOps
from fake_server.models.account.tokens import TokenOps
from fake_server.models.errors import ApiError, BadRequest, Conflict, at_capacity
from fake_server.models.paging import window
from fake_server.models.sandbox import STATUSES, Sandbox, SandboxSpec

if TYPE_CHECKING:
    from fake_server.models.context import Context

__all__ = ["Account", "Page", "Stats", "World"]

MAX_NAME = 63
#: A non-zero quota at create is refused; the service stamps its default (COMPATIBILITY.md
#: 0.6.0: "The server rejects any non-zero value with 400"). Fork still takes one.
NAME_TAKEN = "a live sandbox already has this name"
BANDWIDTH_AT_CREATE = "cannot be set at create; recharge the quota after create"


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Sandbox]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class Stats:
    running: int
    paused: int
    other: int
    total: int


class Account(ExecOps, ProcessOps, AdminOps, TokenOps, MetricsOps, AccountBase):
    """Every API operation of one account, as one method each.

    One mixin per family of routes, each a module of its own over ``AccountBase`` (the
    account's sandboxes and the lookups every operation needs): ``ExecOps`` commands and files,
    ``ProcessOps`` managed processes, ``AdminOps`` a sandbox's settings (fork, resize, egress,
    bandwidth, keys), ``TokenOps`` access tokens, ``MetricsOps`` metrics; the sandbox lifecycle
    is here. Mixins rather than parts the account holds because every family reads and writes
    the same state (sandboxes, credit, resources) and the HTTP layer, the faults and
    persistence deal with one account object whose methods are the operations.
    """

    def create_sandbox(self, spec: SandboxSpec) -> Sandbox:
        self.require_credit()
        catalog = self.ctx.catalog
        spec = dataclasses.replace(
            spec,
            rootfs=spec.rootfs or catalog.default_rootfs,
            region=spec.region or catalog.default_region,
        )
        shape = catalog.shapes.get(spec.shape)
        if shape is None:
            raise BadRequest("unknown shape", field="shape")
        plan = self.resources.plan_create(spec)
        if spec.rootfs not in catalog.rootfs and plan.template is None:
            raise BadRequest("unknown rootfs", field="rootfs")
        if spec.region not in catalog.regions:
            raise BadRequest("unknown region", field="region")
        if spec.name is not None and not 1 <= len(spec.name) <= MAX_NAME:
            raise BadRequest(f"must be 1 to {MAX_NAME} characters", field="name")
        if spec.name is not None and spec.name in self.live_names():
            raise Conflict(NAME_TAKEN, code="sandbox_name_taken")
        check_envs(spec.envs)
        if (spec.extras.get("disk_mib") or 0) > MAX_DISK_MIB:  # as a resize is bounded
            raise BadRequest(f"must be at most {MAX_DISK_MIB}", field="disk_mib")
        check_auto_pause(spec.extras.get("auto_pause_after_seconds"))
        if spec.extras.get("bandwidth_quota_bytes"):
            raise BadRequest(BANDWIDTH_AT_CREATE, field="bandwidth_quota_bytes")
        from fake_server.runtime import CapacityError

        ids = self.ctx.ids
        sandbox_id = ids.sandbox_id()
        try:
            disk_mib = spec.extras.get("disk_mib") or shape.default_disk_mib
            image = plan.template.image if plan.template is not None else None
            machine = self.ctx.runtime_choice().new_sandbox(
                sandbox_id, spec.rootfs, disk_mib, image=image
            )
        except CapacityError as exc:
            raise at_capacity(exc) from None
        try:
            sandbox = Sandbox(
                sandbox_id=sandbox_id,
                account_id=self.id,
                spec=spec,
                shape=shape,
                name=spec.name or self.fresh_name(),
                ip=ids.private_ip(),
                spawn_ms=ids.spawn_ms(),
                machine=machine,
                ctx=self.ctx,
            )
        except ApiError:  # egress rules the runtime cannot honour: nothing left behind
            machine.destroy()
            raise
        self.sandboxes[sandbox.id] = sandbox
        self.track_usage(sandbox)
        try:
            self.resources.apply(plan, sandbox)
        except ApiError:  # e.g. a network the runtime cannot join: no half-made sandbox
            self.forget_sandbox(sandbox.id)
            raise
        return sandbox

    def get_sandbox(self, sandbox_id: str) -> Sandbox:
        return self._sandbox(sandbox_id, read=True)

    def list_sandboxes(self, *, status: str | None, limit: int, offset: int) -> Page:
        if status is not None and status not in STATUSES:
            raise BadRequest("unknown status", field="status")
        limit, offset = window(limit, offset)
        live = self._settled()
        matching = [s for s in live if status is None or s.status == status]
        return Page(matching[offset : offset + limit], len(matching), limit, offset)

    def delete_sandbox(self, sandbox_id: str) -> Sandbox:
        sandbox = self._sandbox(sandbox_id)
        sandbox.destroy()
        return sandbox

    def pause_sandbox(self, sandbox_id: str) -> tuple[Sandbox, bool]:
        """The sandbox and whether a pause was started (False: already paused)."""
        sandbox = self._sandbox(sandbox_id)
        return sandbox, sandbox.pause()

    def resume_sandbox(self, sandbox_id: str) -> tuple[Sandbox, bool]:
        sandbox = self._sandbox(sandbox_id)
        self.require_credit()
        return sandbox, sandbox.resume()

    def whoami(self) -> Stats:
        live = self._settled()
        running = sum(s.status == "running" for s in live)
        paused = sum(s.status == "paused" for s in live)
        return Stats(running, paused, len(live) - running - paused, len(live))

    def _settled(self) -> list[Sandbox]:
        live = []
        for sandbox in list(self.sandboxes.values()):
            sandbox.settle()
            if sandbox.gone():
                del self.sandboxes[sandbox.id]
            else:
                live.append(sandbox)
        return live


class World:
    """All accounts of one fake, by API key."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.accounts: dict[str, Account] = {}
        self._requests = 0

    @property
    def requests(self) -> int:
        """How many request ids were handed out (a restarted ``serve`` goes on from there)."""
        return self._requests

    @requests.setter
    def requests(self, count: int) -> None:
        self._requests = count

    def next_request_id(self) -> str:
        """The ``X-Request-Id`` of the next request: numbered, so a seed replays the same."""
        self._requests += 1
        return f"req-{self._requests:012d}"

    def add_account(self, api_key: str | None = None) -> Account:
        key = api_key if api_key is not None else self.ctx.ids.api_key()
        if not key or not key.isprintable() or len(key) > 512:
            raise ValueError("an API key must be 1-512 printable characters")
        if key in self.accounts:
            raise ValueError("that API key already belongs to an account")
        account = Account(account_id=self.ctx.ids.user_id(), api_key=key, ctx=self.ctx)
        self.accounts[key] = account
        return account

    def account_for_key(self, api_key: str) -> Account | None:
        return self.accounts.get(api_key)

    def sandboxes(self) -> list[Sandbox]:
        return [s for a in self.accounts.values() for s in a.sandboxes.values()]

    def find_sandbox(self, sandbox_id: str) -> Sandbox | None:
        for account in self.accounts.values():
            sandbox = account.sandboxes.get(sandbox_id)
            if sandbox is not None:
                return sandbox
        return None

    def token_owner(self, token: str) -> tuple[Account, str] | None:
        """The account and sandbox a sandbox access token acts for, if it is current."""
        for account in self.accounts.values():
            for sandbox in account.sandboxes.values():
                current = sandbox.access_token
                if current is not None and current.token == token:
                    return account, sandbox.id
        return None

    def account_of(self, sandbox_id: str) -> Account | None:
        for account in self.accounts.values():
            if sandbox_id in account.sandboxes:
                return account
        return None

    def clear(self) -> None:
        """Kill every process and drop every account."""
        for account in self.accounts.values():
            for sandbox_id in list(account.sandboxes):
                account.forget_sandbox(sandbox_id)
            account.resources.templates.clear()
        self.accounts.clear()
        self._requests = 0
        self.ctx.resources = type(self.ctx.resources)()  # settings and bucket contents too
