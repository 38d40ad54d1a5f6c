"""Templates on the wire."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http.wire.common import iso

if TYPE_CHECKING:
    from fake_server.models.resources.templates import Template

__all__ = ["template_json"]


def template_json(template: Template, now: float, *, dockerfile: bool = False) -> dict[str, Any]:
    status = template.status(now)
    data: dict[str, Any] = {
        "id": template.id,
        "name": template.name,
        "base": template.base,
        "status": status,
        "ext4_size_bytes": template.size if status == "ready" else 0,
        "created_at": iso(template.created_at),
    }
    if status == "ready":
        built = template.created_at + (template.finished_at() - template.started)
        data["built_at"] = iso(built)
    if dockerfile:
        data["dockerfile"] = template.dockerfile
    return data
