"""One account's resources beyond sandboxes: networks, disks, templates and desktops, and
what a sandbox create asks of them (``networks``, ``disks``, ``host_id``, ``node_selector``,
a template as ``rootfs``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.models.errors import ApiError, BadRequest, Conflict, NotFound
from fake_server.models.resources.desktop import DESKTOP_ROOTFS, Desktop
from fake_server.models.resources.disks import Disk, Disks
from fake_server.models.resources.networks import Network, Networks
from fake_server.models.resources.templates import Template, Templates, seed_sandbox
from fake_server.models.transitions import GONE

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models.context import Context
    from fake_server.models.sandbox import Sandbox, SandboxSpec

__all__ = ["AccountResources", "CreatePlan"]


@dataclass(slots=True)
class CreatePlan:
    """What a create joins and mounts once the sandbox exists (all validated beforehand)."""

    networks: list[Network] = field(default_factory=list)
    disks: list[tuple[Disk, str, str]] = field(default_factory=list)
    template: Template | None = None


class AccountResources:
    def __init__(self, ctx: Context, sandbox: Callable[[str], Sandbox]) -> None:
        self.ctx = ctx
        self._sandbox = sandbox
        self.networks = Networks(ctx, sandbox)
        self.disks = Disks(ctx, sandbox)
        self.templates = Templates(ctx)
        self.desktops: dict[str, Desktop] = {}

    # -- create ---------------------------------------------------------------------------

    def plan_create(self, spec: SandboxSpec) -> CreatePlan:
        extras = spec.extras
        plan = CreatePlan()
        plan.template = self.templates.rootfs(spec.rootfs) if spec.rootfs else None
        raw_networks = extras.get("networks_raw")
        if raw_networks is not None:
            if not isinstance(raw_networks, list):
                raise BadRequest("must be a list of {id} objects", field="networks")
            for entry in raw_networks:
                network_id = entry.get("id") if isinstance(entry, dict) else entry
                if not isinstance(network_id, str) or not network_id:
                    raise BadRequest("entries need an id", field="networks")
                network = self.networks.find(network_id)
                if network is None:
                    raise NotFound(f"network {network_id} not found", field="networks")
                if network not in plan.networks:
                    plan.networks.append(network)
        raw_disks = extras.get("disks_raw")
        if raw_disks is not None:
            if not isinstance(raw_disks, list):
                raise BadRequest("must be a list of {disk_id, mount_path}", field="disks")
            for entry in raw_disks:
                try:
                    checked = self.disks.check_attachment(entry)
                except NotFound:
                    raise NotFound("disk not found", field="disks") from None
                if any(checked[1] == other[1] for other in plan.disks):
                    raise Conflict("two disks on one mount_path", code="mount_busy")
                plan.disks.append(checked)
        self._check_placement(spec, extras.get("host_id"), extras.get("node_selector"))
        return plan

    def _check_placement(self, spec: SandboxSpec, host_id: Any, selector: Any) -> None:
        hosts = self.ctx.resources.hosts
        if host_id not in (None, ""):
            if not isinstance(host_id, str):
                raise BadRequest("must be a string", field="host_id")
            host = hosts.get(host_id)
            if host is None:
                raise NotFound("host not found", field="host_id")
            if spec.region and host.region != spec.region:
                raise BadRequest(f"host is in region {host.region}", field="host_id")
        if selector not in (None, {}):
            if not isinstance(selector, dict) or not all(
                isinstance(v, str) for v in selector.values()
            ):
                raise BadRequest("must be an object of string values", field="node_selector")
            candidates = [hosts[host_id]] if host_id else list(hosts.values())
            if not any(all(h.labels.get(k) == v for k, v in selector.items()) for h in candidates):
                raise BadRequest("no host matches these labels", field="node_selector")

    def apply(self, plan: CreatePlan, sandbox: Sandbox) -> None:
        if plan.template is not None:
            seed_sandbox(plan.template, sandbox)
        joined = []
        try:
            for network in plan.networks:
                self.networks.join(network, sandbox)
                joined.append(network)
        except ApiError:
            for network in joined:
                network.members.pop(sandbox.id, None)
            raise
        for disk, mount_path, sub_path in plan.disks:
            self.disks.mount(sandbox, disk, mount_path, sub_path)

    # -- desktops -------------------------------------------------------------------------

    def desktop(self, sandbox_id: str) -> Desktop:
        """The running desktop sandbox's session (409 for other rootfs, as the service)."""
        for known in [sid for sid in self.desktops if sid != sandbox_id]:
            try:  # drop the sessions of sandboxes that are destroyed or gone
                if self._sandbox(known).status in GONE:
                    del self.desktops[known]
            except NotFound:
                del self.desktops[known]
        sandbox = self._sandbox(sandbox_id)
        sandbox.require_running()
        desktop = self.desktops.get(sandbox.id)
        if desktop is None:
            rootfs = sandbox.spec.rootfs
            named = rootfs in self.templates.rootfs_names()  # a template's id or name
            base = self.templates.get(rootfs).base if named else rootfs
            if base not in DESKTOP_ROOTFS:
                raise Conflict(
                    "computer use needs a desktop rootfs (desktop:1)", code="not_a_desktop"
                )
            desktop = self.desktops[sandbox.id] = Desktop(self.ctx, sandbox.id, sandbox.machine)
        return desktop
