"""Sandbox settings after create: PATCH (ingress, auto-pause), fork, resize, SSH keys,
egress allowlist, bandwidth, lookup by IP and the host list."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.models.account.envs import check_envs
from fake_server.models.errors import (
    ApiError,
    BadRequest,
    Conflict,
    NotFound,
    ServiceUnavailable,
)
from fake_server.models.transitions import ENDING

if TYPE_CHECKING:
    from fake_server.models.account.table import SandboxTable
    from fake_server.models.sandbox import Sandbox
    from fake_server.runtime.api import Machine

__all__ = ["FORK_FAILED", "Admin", "ForkSpec", "Host", "SandboxPatch", "check_auto_pause"]

#: A fork whose copy of its source's files failed (the host's disk, a file gone meanwhile).
FORK_FAILED = "the sandbox's files could not be copied into a fork; nothing was made"

#: Auto-pause bounds the SDKs enforce client-side (1 minute to 24 hours).
AUTO_PAUSE_MIN, AUTO_PAUSE_MAX = 60, 86400
MAX_DISK_MIB = 1024 * 1024
MAX_SSH_KEYS = 32
MAX_EGRESS = 64
_SSH_KEY = re.compile(r"^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-\S+|sk-\S+) [A-Za-z0-9+/=]+( .*)?$")
#: host, *.domain or CIDR, optionally :port; or "*", which allows everything (as no rules do).
_EGRESS = re.compile(
    r"^\*$|^(\*\.)?[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?$|^[0-9./]{7,18}(:[0-9]{1,5})?$"
)


@dataclass(frozen=True, slots=True)
class SandboxPatch:
    """``None`` leaves a setting unchanged; ``disable_auto_pause`` clears the timeout."""

    ingress_enabled: bool | None = None
    auto_pause_after_seconds: int | None = None
    disable_auto_pause: bool = False


@dataclass(frozen=True, slots=True)
class ForkSpec:
    """Overrides for the child; ``None`` inherits from the source."""

    start_paused: bool = False
    ssh_pubkeys: tuple[str, ...] | None = None
    egress: tuple[str, ...] | None = None
    ingress_enabled: bool | None = None
    envs: tuple[tuple[str, str], ...] | None = None
    bandwidth_quota_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Host:
    id: str
    region: str
    free_mib: int
    vm_count: int
    rootfses: tuple[str, ...]
    status: str = "active"


def check_ssh_keys(keys: tuple[str, ...], field: str) -> None:
    for key in keys:
        if len(key) > 16384 or not _SSH_KEY.match(key.strip()):
            raise BadRequest("must be OpenSSH public keys", field=field)


def check_egress(rules: tuple[str, ...], field: str = "egress") -> None:
    if len(rules) > MAX_EGRESS:
        raise BadRequest(f"at most {MAX_EGRESS} rules", field=field)
    for rule in rules:
        if not _EGRESS.match(rule):
            raise BadRequest("rules must be *, host, *.domain, CIDR, optionally :port", field=field)


def check_auto_pause(seconds: int | None) -> None:
    """The service's range on create and on PATCH alike (COMPATIBILITY.md "Idle auto-pause":
    "Valid range 60–86400, server-validated"; TS example 40: "the server rejects anything
    outside it")."""
    if seconds is not None and not AUTO_PAUSE_MIN <= seconds <= AUTO_PAUSE_MAX:
        raise BadRequest(
            f"must be between {AUTO_PAUSE_MIN} and {AUTO_PAUSE_MAX} seconds",
            field="auto_pause_after_seconds",
        )


class Admin:
    """A sandbox's settings after create (``account.admin``): PATCH, fork, resize, SSH keys,
    egress, bandwidth, lookup by IP and the hosts. A service over the account's table."""

    def __init__(self, account: SandboxTable) -> None:
        self.account = account

    def update_sandbox(self, sandbox_id: str, patch: SandboxPatch) -> Sandbox:
        sandbox = self.account.sandbox(sandbox_id)
        _not_destroyed(sandbox)
        after = patch.auto_pause_after_seconds
        check_auto_pause(after)
        if patch.ingress_enabled is not None:
            sandbox.ingress_enabled = patch.ingress_enabled
        if patch.disable_auto_pause:
            sandbox.auto_pause_after_seconds = None
        elif after is not None:
            sandbox.auto_pause_after_seconds = after
            sandbox.touch()
            sandbox.watch_idle()
        return sandbox

    def fork_sandbox(
        self, sandbox_id: str, spec: ForkSpec, machine: Machine | None = None
    ) -> Sandbox:
        """A new sandbox from a paused one: a copy of its disk and settings, ``forking`` until
        the creating step passed, then ``running`` (or ``paused`` with ``start_paused``).
        ``machine``: the copy made already (``Machine.fork_async``), after ``check_fork``;
        destroyed when the fork is refused."""
        try:
            source = self.check_fork(sandbox_id, spec)
        except ApiError:  # refused since the copy was made: the source went meanwhile
            if machine is not None:
                machine.destroy()
            raise
        envs = tuple(source.envs.items()) if spec.envs is None else spec.envs
        from fake_server.models.sandbox import Sandbox

        ids = self.account.ctx.ids
        machine = source.machine.fork() if machine is None else machine
        try:
            child = Sandbox(
                sandbox_id=ids.sandbox_id(),
                account_id=self.account.id,
                spec=source.spec,
                shape=source.shape,
                name=self.account.fresh_name(),
                ip=ids.private_ip(),
                spawn_ms=ids.spawn_ms(),
                machine=machine,
                ctx=self.account.ctx,
                forked_from=source.id,
                start_paused=spec.start_paused,
                egress=list(source.egress if spec.egress is None else spec.egress),
            )
        except ApiError:  # egress rules the runtime cannot honour: no copy left behind
            machine.destroy()
            raise
        child.envs = dict(envs)
        child.disk_mib = source.disk_mib
        child.auto_pause_after_seconds = source.auto_pause_after_seconds
        child.ingress_enabled = (
            source.ingress_enabled if spec.ingress_enabled is None else spec.ingress_enabled
        )
        child.ssh_pubkeys = list(
            source.ssh_pubkeys if spec.ssh_pubkeys is None else spec.ssh_pubkeys
        )
        child.bandwidth = source.bandwidth.copy()
        if spec.bandwidth_quota_bytes is not None:
            child.bandwidth.quota_bytes = spec.bandwidth_quota_bytes
        self.account.sandboxes[child.id] = child
        self.account.track_usage(child)
        return child

    def check_fork(self, sandbox_id: str, spec: ForkSpec) -> Sandbox:
        """The sandbox ``fork_sandbox`` forks, or the error it answers (checked before the
        copy and again after)."""
        source = self.account.sandbox(sandbox_id)
        self.account.require_credit()
        if source.status != "paused":
            raise Conflict(
                f"sandbox is {source.status}; only a paused sandbox can be forked",
                code="invalid_state",
            )
        if spec.ssh_pubkeys is not None:
            check_ssh_keys(spec.ssh_pubkeys, "ssh_pubkeys")
        if spec.egress is not None:
            check_egress(spec.egress)
        check_envs(tuple(source.envs.items()) if spec.envs is None else spec.envs)
        return source

    def fork_failed(self, sandbox_id: str, spec: ForkSpec) -> ApiError:
        """The answer to a fork whose copy of the files failed: the source's own error when it
        went or changed meanwhile (raised), else a 503 saying nothing was made."""
        self.check_fork(sandbox_id, spec)
        return ServiceUnavailable(FORK_FAILED, code="fork_failed")

    def resize_sandbox(self, sandbox_id: str, disk_mib: int) -> Sandbox:
        sandbox = self.account.sandbox(sandbox_id)
        _not_destroyed(sandbox)
        if disk_mib <= sandbox.disk_mib:
            raise BadRequest(
                f"must be larger than the current {sandbox.disk_mib}", field="disk_mib"
            )
        if disk_mib > MAX_DISK_MIB:
            raise BadRequest(f"must be at most {MAX_DISK_MIB}", field="disk_mib")
        sandbox.disk_mib = disk_mib
        return sandbox

    def add_ssh_pubkeys(self, sandbox_id: str, keys: tuple[str, ...]) -> Sandbox:
        sandbox = self.account.sandbox(sandbox_id)
        _not_destroyed(sandbox)
        if not keys:
            raise BadRequest("must list at least one key", field="keys")
        check_ssh_keys(keys, "keys")
        merged = list(dict.fromkeys([*sandbox.ssh_pubkeys, *(k.strip() for k in keys)]))
        if len(merged) > MAX_SSH_KEYS:
            raise BadRequest(f"a sandbox holds at most {MAX_SSH_KEYS} keys", field="keys")
        sandbox.ssh_pubkeys = merged
        return sandbox

    def get_egress(self, sandbox_id: str) -> Sandbox:
        return self.account.sandbox(sandbox_id)

    def set_egress(self, sandbox_id: str, rules: tuple[str, ...]) -> Sandbox:
        sandbox = self.account.sandbox(sandbox_id)
        _not_destroyed(sandbox)
        check_egress(rules)
        sandbox.egress = list(dict.fromkeys(rules))
        return sandbox

    def get_bandwidth(self, sandbox_id: str) -> Sandbox:
        return self.account.sandbox(sandbox_id)

    def recharge_bandwidth(self, sandbox_id: str, add_bytes: int) -> Sandbox:
        sandbox = self.account.sandbox(sandbox_id)
        self.account.require_credit()
        _not_destroyed(sandbox)
        if add_bytes <= 0:
            raise BadRequest("must be a positive integer", field="add_bytes")
        sandbox.bandwidth.recharge(add_bytes)
        return sandbox

    def sandbox_by_ip(self, ip: str) -> Sandbox:
        for sandbox in list(self.account.sandboxes.values()):
            if sandbox.ip == ip:
                return self.account.sandbox(sandbox.id, read=True)
        raise NotFound("no sandbox has this IP address", code="sandbox_not_found")

    def hosts(self) -> list[Host]:
        """One worker per region, carrying every catalog image; counts are this account's."""
        catalog = self.account.ctx.catalog
        live = [s for s in self.account.sandboxes.values() if s.status not in ("destroyed",)]
        return [
            Host(
                id=f"host-{region}-1",
                region=region,
                free_mib=max(
                    0, 262144 - sum(s.shape.mem_mib for s in live if s.spec.region == region)
                ),
                vm_count=sum(s.spec.region == region for s in live),
                rootfses=tuple(catalog.rootfs),
            )
            for region in catalog.regions
        ]


def _not_destroyed(sandbox: Sandbox) -> None:
    if sandbox.status in ENDING:
        raise Conflict(f"sandbox is {sandbox.status}", code="invalid_state")
