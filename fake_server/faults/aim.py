"""What an out-of-band change aims at: the ids an action hits (``Aim``) and the three errors
for a change the world cannot take.

Kept apart from the actions and the registry so both can name them without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "AIM_IDS",
    "Aim",
    "TargetConflictError",
    "TargetError",
    "UnknownTargetError",
]

#: The ids an out-of-band action may name, in the order the control API checks them.
AIM_IDS: Final = ("sandbox_id", "process_id", "network_id", "disk_id", "template_id")


@dataclass(frozen=True, slots=True)
class Aim:
    """The ids one application of an out-of-band action hits.

    ``account`` is the account the change is made for (the calling account when a fault fires,
    the control API's ``account`` field when applied now): a resource of another account is
    refused. ``None`` accepts any account.
    """

    sandbox_id: str | None = None
    process_id: str | None = None
    network_id: str | None = None
    disk_id: str | None = None
    template_id: str | None = None
    account: str | None = None

    def ids(self) -> dict[str, Any]:
        """The ids by name (``AIM_IDS``): a journal ``Event`` has fields of the same names."""
        return {name: getattr(self, name) for name in AIM_IDS}

    def id(self, name: str) -> str:
        """The id ``name`` (one of ``AIM_IDS``); the action's ``needs`` made sure it is set."""
        value = getattr(self, name)
        if not isinstance(value, str):  # pragma: no cover - aim() never plans one without it
            raise ValueError(f"this action needs {name}")
        return value


class UnknownTargetError(LookupError):
    """The sandbox, process or resource an out-of-band change names does not exist (any more)."""


class TargetError(ValueError):
    """The target exists but cannot take the change (e.g. a file path that is a directory).

    ``field`` names the part of the action at fault, for the control API's 400.
    """

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class TargetConflictError(RuntimeError):
    """The target exists but is in the wrong state or account for the change (a 409).

    ``code`` is the envelope's machine-readable code: ``wrong_account``, ``not_attached``,
    ``build_ended``.
    """

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
