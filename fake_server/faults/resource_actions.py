"""Out-of-band actions on the account and its resources: a network vanishes, a disk is
detached, a template build fails, the credit runs out.

Each names its resource by its own field or takes it from the call (a fault on
``get_template`` fails the template the call asks about). The change is made for the calling
account (or the control API's ``account``): a resource of another account is refused with
``wrong_account``, like a resource in the wrong state (``not_attached``, ``build_ended``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from fake_server.faults.actions import OutOfBandAction
from fake_server.faults.aim import TargetConflictError, UnknownTargetError
from fake_server.faults.lookups import owner_of, sandbox_of

if TYPE_CHECKING:
    from fake_server.faults.aim import Aim
    from fake_server.models import World


#: Longest ``reason`` a failed build may log.
MAX_REASON = 200


@dataclass(frozen=True)
class VanishNetwork(OutOfBandAction):
    """The network disappears behind the API's back: its members are detached at once, every
    later request for it gets 404 and a create naming it is refused."""

    kind: ClassVar[str] = "vanish_network"
    needs: ClassVar[tuple[str, ...]] = ("network_id",)
    network_id: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()

    def apply(self, world: World, aim: Aim) -> None:
        network_id = aim.id("network_id")
        owner = owner_of(world, "network", aim.account, lambda r: r.networks.items.get(network_id))
        owner.resources.networks.vanish(network_id)


@dataclass(frozen=True)
class DetachDisk(OutOfBandAction):
    """The disk is unmounted from one sandbox (``sandbox_id``; every sandbox when the call
    and the action name none), optionally only at ``mount_path``.

    Files under the mount path vanish from that sandbox; the disk's data survives and shows
    again when the disk is attached again.
    """

    kind: ClassVar[str] = "detach_disk"
    needs: ClassVar[tuple[str, ...]] = ("disk_id",)
    disk_id: str | None = None
    sandbox_id: str | None = None
    mount_path: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mount_path is not None and (
            not isinstance(self.mount_path, str) or not self.mount_path.startswith("/")
        ):
            raise ValueError("mount_path must be an absolute path")

    def apply(self, world: World, aim: Aim) -> None:
        disk_id, sandbox_id, mount_path = aim.id("disk_id"), aim.sandbox_id, self.mount_path
        owner = owner_of(world, "disk", aim.account, lambda r: r.disks.items.get(disk_id))
        disks = owner.resources.disks
        attachments = disks.live_attachments(disk=disks.items[disk_id])
        if sandbox_id is not None:
            sandbox = sandbox_of(world, sandbox_id)
            if sandbox.account_id != owner.id:
                raise TargetConflictError(
                    "the disk and the sandbox belong to different accounts", code="wrong_account"
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


@dataclass(frozen=True)
class FailTemplateBuild(OutOfBandAction):
    """The template's build (``pending`` or ``building``) ends ``failed`` now, with
    ``build failed: <reason>`` as the last line of its build log."""

    kind: ClassVar[str] = "fail_template_build"
    needs: ClassVar[tuple[str, ...]] = ("template_id",)
    template_id: str | None = None
    reason: str = "injected build failure"

    def __post_init__(self) -> None:
        super().__post_init__()
        if (
            not isinstance(self.reason, str)
            or not self.reason.strip()
            or len(self.reason) > MAX_REASON
            or "\n" in self.reason
        ):
            raise ValueError(f"reason must be one line of 1 to {MAX_REASON} characters")

    def apply(self, world: World, aim: Aim) -> None:
        template_id = aim.id("template_id")
        owner = owner_of(
            world, "template", aim.account, lambda r: r.templates.items.get(template_id)
        )
        template = owner.resources.templates.items[template_id]
        now = owner.resources.ctx.clock.now()
        status = template.status(now)
        if status not in ("pending", "building"):
            raise TargetConflictError(
                f"the template build already ended (status {status})", code="build_ended"
            )
        template.fail(now, self.reason)


@dataclass(frozen=True)
class ExhaustCredit(OutOfBandAction):
    """The account's credit runs out now: every later cost-incurring call (create, resume,
    fork, bandwidth recharge, disk/network/template create) answers 402 until a test sets a
    balance again. A fault's calling account; applied now, the control API's ``account``, or
    every account when none is named."""

    kind: ClassVar[str] = "exhaust_credit"
    needs: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        super().__post_init__()

    def apply(self, world: World, aim: Aim) -> None:
        """Every account's when none is named."""
        accounts = [a for a in world.accounts.values() if aim.account in (None, a.id)]
        if not accounts:
            raise UnknownTargetError("no such account")
        for account in accounts:
            account.credit.set(0)
