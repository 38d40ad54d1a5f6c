"""Routes of the account resources: networks, disks, templates and computer use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http import resources_disks as disks
from fake_server.http import resources_networks as networks
from fake_server.http import resources_templates as templates
from fake_server.http.resources_computer import COMPUTER_ROUTES

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aiohttp import web

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

__all__ = ["RESOURCE_ROUTES"]

_SB = "/v1/sandboxes/{sandbox_id}"
_NET = "/v1/networks/{network_id}"
_DISK = "/v1/disks/{disk_id}"
_TPL = "/v1/templates/{template_id}"

#: ``(method, path, operation, handler)``, appended to ``routes.ROUTES``.
RESOURCE_ROUTES: tuple[tuple[str, str, str, Handler], ...] = (
    ("GET", "/v1/networks", "list_networks", networks.list_networks),
    ("POST", "/v1/networks", "create_network", networks.create_network),
    ("GET", _NET, "get_network", networks.get_network),
    ("DELETE", _NET, "delete_network", networks.delete_network),
    ("POST", _SB + "/networks", "attach_network", networks.attach_network),
    ("DELETE", _SB + "/networks/{network_id}", "detach_network", networks.detach_network),
    ("GET", "/v1/disks", "list_disks", disks.list_disks),
    ("POST", "/v1/disks", "create_disk", disks.create_disk),
    ("GET", _DISK, "get_disk", disks.get_disk),
    ("DELETE", _DISK, "delete_disk", disks.delete_disk),
    ("PATCH", _DISK, "rotate_disk_credentials", disks.rotate_disk_credentials),
    ("GET", _SB + "/disks", "list_sandbox_disks", disks.list_sandbox_disks),
    ("POST", _SB + "/disks", "attach_disk", disks.attach_disk),
    ("DELETE", _SB + "/disks/{disk_id}", "detach_disk", disks.detach_disk),
    ("GET", "/v1/templates", "list_templates", templates.list_templates),
    ("POST", "/v1/templates", "create_template", templates.create_template),
    ("GET", _TPL, "get_template", templates.get_template),
    ("DELETE", _TPL, "delete_template", templates.delete_template),
    ("GET", _TPL + "/logs", "template_logs", templates.template_logs),
    *COMPUTER_ROUTES,
)
