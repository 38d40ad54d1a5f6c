"""Out-of-band changes to the account resources: a network vanishes, a disk is detached, a
template build fails, the credit runs out (``faults.resource_actions``; ``WorldTarget`` holds one
and hands these calls to it).

Every resource is looked up across the fake's accounts so an unknown id and one of another
account get different answers: ``UnknownTargetError`` (404) for the first,
``TargetConflictError`` ``wrong_account`` (409) for the second.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, TypeVar

from fake_server.faults.target import TargetConflictError, UnknownTargetError

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models import World
    from fake_server.models.account.world import Account
    from fake_server.models.resources.holdings import AccountResources

__all__ = ["ResourceChanges"]

_T = TypeVar("_T")


class ResourceChanges:
    """Changes to the resources of ``world``'s accounts, each made through ``run`` (which runs
    it on the fake's loop and returns when it has happened)."""

    def __init__(self, world: World, run: Callable[[Callable[[], None]], None]) -> None:
        self._world = world
        self._run = run

    def exhaust_credit(self, account: str | None) -> None:
        """Set the credit of ``account`` (every account when None) to 0."""

        def exhaust() -> None:
            accounts = [
                a for a in self._world.accounts.values() if account is None or a.id == account
            ]
            if not accounts:
                raise UnknownTargetError("no such account")
            for found in accounts:
                found.credit.set(0)

        self._run(exhaust)

    def vanish_network(self, network_id: str, account: str | None) -> int:
        """Drop the network with its memberships; answers how many members it had."""
        detached: list[int] = []

        def vanish() -> None:
            resources = self._owner(
                "network", account, lambda r: r.networks.items.get(network_id)
            ).resources
            network = resources.networks.items[network_id]
            detached.append(len(network.live_members()))
            resources.networks.vanish(network_id)

        self._run(vanish)
        return detached[0]

    def detach_disk(
        self, disk_id: str, sandbox_id: str | None, mount_path: str | None, account: str | None
    ) -> int:
        """Unmount the disk (from one sandbox, at one path); answers how many mounts went."""
        gone: list[int] = []

        def detach() -> None:
            owner = self._owner("disk", account, lambda r: r.disks.items.get(disk_id))
            disks = owner.resources.disks
            disk = disks.items[disk_id]
            attachments = disks.live_attachments(disk=disk)
            if sandbox_id is not None:
                sandbox = self._world.find_sandbox(sandbox_id)
                if sandbox is not None:
                    sandbox.settle()
                if sandbox is None or sandbox.status == "destroyed":
                    raise UnknownTargetError("no such sandbox")
                if sandbox.account_id != owner.id:
                    raise TargetConflictError(
                        "the disk and the sandbox belong to different accounts",
                        code="wrong_account",
                    )
                attachments = [a for a in attachments if a.sandbox is sandbox]
            if mount_path is not None:
                wanted = posixpath.normpath(mount_path)
                attachments = [a for a in attachments if a.mount_path == wanted]
            if not attachments:
                where = "this sandbox" if sandbox_id is not None else "any sandbox"
                at = f" at {posixpath.normpath(mount_path)}" if mount_path is not None else ""
                raise TargetConflictError(
                    f"the disk is not attached to {where}{at}", code="not_attached"
                )
            disks.unmount(attachments)
            gone.append(len(attachments))

        self._run(detach)
        return gone[0]

    def fail_template_build(self, template_id: str, reason: str, account: str | None) -> None:
        def fail() -> None:
            resources = self._owner(
                "template", account, lambda r: r.templates.items.get(template_id)
            ).resources
            template = resources.templates.items[template_id]
            now = resources.ctx.clock.now()
            status = template.status(now)
            if status not in ("pending", "building"):
                raise TargetConflictError(
                    f"the template build already ended (status {status})", code="build_ended"
                )
            template.fail(now, reason)

        self._run(fail)

    def _owner(
        self,
        kind: str,
        account: str | None,
        find: Callable[[AccountResources], _T | None],
    ) -> Account:
        """The account holding the resource ``find`` looks up."""
        for owner in list(self._world.accounts.values()):
            if find(owner.resources) is not None:
                if account is not None and owner.id != account:
                    raise TargetConflictError(
                        f"the {kind} belongs to another account", code="wrong_account"
                    )
                return owner
        raise UnknownTargetError(f"no such {kind}")
