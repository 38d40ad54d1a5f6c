"""What the account resources (networks, disks, templates, desktops) share: their name rule."""

from __future__ import annotations

import re
from typing import Any

from fake_server.models.errors import BadRequest

__all__ = ["NAME_RULE", "check_name"]

NAME_RULE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def check_name(value: Any, field_name: str = "name") -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest("is required", field=field_name)
    if not NAME_RULE.match(value):
        raise BadRequest("must match ^[a-z0-9][a-z0-9-]{0,62}$", field=field_name)
    return value
