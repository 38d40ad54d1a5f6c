"""Out-of-band actions on the account and its resources: a network vanishes, a disk is
detached, a template build fails, the credit runs out.

Each names its resource by its own field or takes it from the call (a fault on
``get_template`` fails the template the call asks about). The change is made for the calling
account (or the control API's ``account``): a resource of another account is refused with
``wrong_account``, like a resource in the wrong state (``not_attached``, ``build_ended``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from fake_server.faults.actions import OutOfBandAction

if TYPE_CHECKING:
    from fake_server.faults.target import Aim, OutOfBandTarget


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

    def apply(self, target: OutOfBandTarget, aim: Aim) -> None:
        target.vanish_network(aim.id("network_id"), aim.account)


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

    def apply(self, target: OutOfBandTarget, aim: Aim) -> None:
        target.detach_disk(aim.id("disk_id"), aim.sandbox_id, self.mount_path, aim.account)


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

    def apply(self, target: OutOfBandTarget, aim: Aim) -> None:
        target.fail_template_build(aim.id("template_id"), self.reason, aim.account)


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

    def apply(self, target: OutOfBandTarget, aim: Aim) -> None:
        target.exhaust_credit(aim.account)
