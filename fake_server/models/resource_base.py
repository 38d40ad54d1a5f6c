"""What the account resources (networks, disks, templates, desktops) share: per-fake settings,
name rules and paging."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from fake_server.models.errors import BadRequest

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from fake_server.runtime.api import SharedBucket

__all__ = [
    "NAME_RULE",
    "Host",
    "ResourceSettings",
    "check_name",
    "page",
    "page_limit",
]

NAME_RULE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
MAX_LIMIT = 500

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Host:
    """A placement target ``host_id`` may name; ``labels`` are what ``node_selector`` matches."""

    id: str
    region: str
    labels: Mapping[str, str] = field(default_factory=dict)


def _hosts() -> dict[str, Host]:
    return {
        "host-eu-1": Host("host-eu-1", "eu", {"region": "eu", "arch": "amd64", "tier": "standard"}),
        "host-us-1": Host("host-us-1", "us", {"region": "us", "arch": "amd64", "tier": "standard"}),
    }


@dataclass(slots=True)
class ResourceSettings:
    """Per-fake knobs for the account resources; tests change them on ``fake.resources``."""

    #: Per-account quotas (a create beyond them is 403 ``quota_exceeded``).
    max_networks: int = 10
    max_disks: int = 20
    max_templates: int = 10
    #: ``False`` makes every disk route answer 503 "disks API not configured".
    disks_configured: bool = True
    #: Fake seconds a template build waits ``pending``, and each Dockerfile step takes.
    template_pending_seconds: float = 1.0
    template_step_seconds: float = 0.5
    #: Placement targets for ``host_id`` and ``node_selector``.
    hosts: dict[str, Host] = field(default_factory=_hosts)
    #: Bucket contents by ``(endpoint, bucket)``: they outlive disk registrations, as a real
    #: bucket outlives its registration.
    buckets: dict[tuple[str, str], SharedBucket] = field(default_factory=dict)
    #: Names this fake's buckets apart from those of an earlier ``reset()`` on runtimes that
    #: keep bucket contents themselves (the process runtime's host directories).
    bucket_space: str = field(default_factory=lambda: secrets.token_hex(8))

    DISKS_OFF: ClassVar[str] = "disks API not configured"


def check_name(value: Any, field_name: str = "name") -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest("is required", field=field_name)
    if not NAME_RULE.match(value):
        raise BadRequest("must match ^[a-z0-9][a-z0-9-]{0,62}$", field=field_name)
    return value


def page_limit(limit: int) -> int:
    """A list's page size: past 500 it is clamped to 500, as the service does (TS
    ``COMPATIBILITY.md`` 0.6.0: "The server clamps ``limit`` to **500**"; ``http.ts`` pages by
    the count it got); 0 is refused (no source shows the service's answer)."""
    if limit < 1:
        raise BadRequest("must be at least 1", field="limit")
    return min(limit, MAX_LIMIT)


def page(items: Sequence[_T], limit: int, offset: int) -> tuple[list[_T], dict[str, int]]:
    """One page and its ``pagination`` object (the list envelope every list route uses)."""
    limit = page_limit(limit)
    if offset < 0:
        raise BadRequest("must be >= 0", field="offset")
    chunk = list(items[offset : offset + limit])
    return chunk, {"total": len(items), "limit": limit, "offset": offset, "count": len(chunk)}
