"""What an out-of-band action looks up in the fake's ``World`` before it changes it.

Every resource is looked up across the fake's accounts so an unknown id and one of another
account get different answers: ``UnknownTargetError`` (404) for the first,
``TargetConflictError`` ``wrong_account`` (409) for the second. A destroyed sandbox (its disk
wiped) takes no change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from fake_server.faults.aim import TargetConflictError, UnknownTargetError

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models import Process, Sandbox, World
    from fake_server.models.account import Account
    from fake_server.models.resources.holdings import AccountResources

__all__ = ["owner_of", "process_of", "sandbox_of"]

_T = TypeVar("_T")


def sandbox_of(world: World, sandbox_id: str) -> Sandbox:
    """A sandbox that still exists."""
    sandbox = world.find_sandbox(sandbox_id)
    if sandbox is not None:
        sandbox.settle()
    if sandbox is None or sandbox.status == "destroyed":
        raise UnknownTargetError("no such sandbox")
    return sandbox


def process_of(world: World, sandbox_id: str, process_id: str) -> Process:
    process = sandbox_of(world, sandbox_id).processes.get(process_id)
    if process is None:
        raise UnknownTargetError("no such process")
    return process


def owner_of(
    world: World,
    kind: str,
    account: str | None,
    find: Callable[[AccountResources], _T | None],
) -> Account:
    """The account holding the resource ``find`` looks up; another than ``account`` (when
    given) is a conflict."""
    for owner in list(world.accounts.values()):
        if find(owner.resources) is not None:
            if account is not None and owner.id != account:
                raise TargetConflictError(
                    f"the {kind} belongs to another account", code="wrong_account"
                )
            return owner
    raise UnknownTargetError(f"no such {kind}")
