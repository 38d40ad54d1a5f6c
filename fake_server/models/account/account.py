"""The account backend (one per API key): its sandbox table, the sandbox lifecycle, and the
services that run the rest of its operations over the table."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from fake_server.models.account.admin import MAX_DISK_MIB, Admin, check_auto_pause
from fake_server.models.account.envs import check_envs
from fake_server.models.account.execs import Execs
from fake_server.models.account.metrics import Metrics
from fake_server.models.account.processes import Processes
from fake_server.models.account.table import SandboxTable
from fake_server.models.account.tokens import Tokens
from fake_server.models.errors import ApiError, BadRequest, Conflict, at_capacity
from fake_server.models.paging import window
from fake_server.models.sandbox import STATUSES, Sandbox, SandboxSpec

__all__ = ["Account", "Page", "Stats"]

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


class Account(SandboxTable):
    """One account (one API key): its sandbox table, credit and resources, the lookups every
    operation needs, and the sandbox lifecycle (create, get, list, delete, pause, resume).

    The other operations are small services over this table, each a module of its own:
    ``execs`` commands and files, ``processes`` managed processes, ``admin`` a sandbox's
    settings (fork, resize, egress, bandwidth, keys), ``tokens`` access tokens, ``metrics``
    metrics. The HTTP layer calls ``account.execs.exec(...)``; the services share only what
    the account holds.
    """

    # Each service is made on first use: an account that never runs a command (every test's
    # default account until it does) makes none.

    @functools.cached_property
    def execs(self) -> Execs:
        return Execs(self)

    @functools.cached_property
    def processes(self) -> Processes:
        return Processes(self)

    @functools.cached_property
    def admin(self) -> Admin:
        return Admin(self)

    @functools.cached_property
    def tokens(self) -> Tokens:
        return Tokens(self)

    @functools.cached_property
    def metrics(self) -> Metrics:
        return Metrics(self)

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
        return self.sandbox(sandbox_id, read=True)

    def list_sandboxes(self, *, status: str | None, limit: int, offset: int) -> Page:
        if status is not None and status not in STATUSES:
            raise BadRequest("unknown status", field="status")
        limit, offset = window(limit, offset)
        live = self._settled()
        matching = [s for s in live if status is None or s.status == status]
        return Page(matching[offset : offset + limit], len(matching), limit, offset)

    def delete_sandbox(self, sandbox_id: str) -> Sandbox:
        sandbox = self.sandbox(sandbox_id)
        sandbox.destroy()
        return sandbox

    def pause_sandbox(self, sandbox_id: str) -> tuple[Sandbox, bool]:
        """The sandbox and whether a pause was started (False: already paused)."""
        sandbox = self.sandbox(sandbox_id)
        return sandbox, sandbox.pause()

    def resume_sandbox(self, sandbox_id: str) -> tuple[Sandbox, bool]:
        sandbox = self.sandbox(sandbox_id)
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
