"""What the dashboard shows of the fake's state, read through the models as the control API
reads them (every sandbox settled first), serialised with the API's own projections."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from fake_server.http.wire.disks import attachment_json, disk_json
from fake_server.http.wire.metrics import metrics_json
from fake_server.http.wire.networks import network_json
from fake_server.http.wire.processes import process_json
from fake_server.http.wire.sandboxes import INGRESS_PREFIX, sandbox_json
from fake_server.http.wire.templates import template_json
from fake_server.models.errors import ApiError
from fake_server.models.journal.recording import REDACTED, secret_name
from fake_server.models.transitions import MOVING
from fake_server.operations import named

if TYPE_CHECKING:
    from fake_server.models import Account, Event, Sandbox, World

__all__ = ["account_rows", "next_build_change", "resources", "sandbox_detail", "sandbox_row"]

#: Requests whose ``path`` query parameter names a file of the sandbox, and the commands.
_FILE_OPERATIONS = named(shown_as="files")
_EXEC_OPERATIONS = named(shown_as="execs")
#: Newest exec requests a sandbox page lists.
MAX_EXECS = 200


def sandbox_row(sandbox: Sandbox) -> dict[str, Any]:
    """One line of the sandboxes page: small, since a thousand of them travel at once."""
    sandbox.settle()
    return {
        "id": sandbox.id,
        "name": sandbox.name,
        "status": sandbox.status,
        "account": sandbox.account_id,
        "shape": sandbox.shape.id,
        "rootfs": sandbox.spec.rootfs,
        "ip": sandbox.ip,
        "created_at": sandbox.created_at,
        "processes": sum(1 for p in sandbox.processes.values() if not p.tree_exited),
    }


def account_rows(world: World) -> list[dict[str, Any]]:
    """Every account by id (its API key stays hidden, as in the journal) with its counts."""
    rows = []
    for account in world.accounts.values():
        account.whoami()  # settles transitions so the counts are current
        statuses: dict[str, int] = {}
        for sandbox in account.sandboxes.values():
            statuses[sandbox.status] = statuses.get(sandbox.status, 0) + 1
        rows.append(
            {
                "id": account.id,
                "api_key": REDACTED,
                "sandboxes": len(account.sandboxes),
                "statuses": statuses,
            }
        )
    return rows


def sandbox_detail(
    world: World, sandbox: Sandbox, events: list[Event], origin: float, url: str
) -> dict[str, Any]:
    """A sandbox's page: settings, processes, status timeline (fake seconds since the journal's
    origin), exec history, files named by requests, preview URLs, disks, networks, bandwidth."""
    sandbox.settle()
    mine = [e for e in events if e.sandbox_id == sandbox.id]
    account = world.account_of(sandbox.id)
    data = sandbox_json(sandbox, url)
    data["account"] = sandbox.account_id
    data["processes"] = [process_json(p) for p in sandbox.processes.values()]
    data["timeline"] = [
        {"t": e.time - origin, "change": e.detail} for e in mine if e.kind == "transition"
    ]
    data["execs"] = _execs(mine, origin)
    data["files"] = _files(sandbox, mine)
    data["preview_ports"] = _preview_ports(mine)
    data["bandwidth"] = {
        "quota_bytes": sandbox.bandwidth.quota_bytes,
        "used_bytes": sandbox.bandwidth.used_bytes,
        "ingress_bytes": sandbox.bandwidth.ingress_bytes,
        "remaining_bytes": sandbox.bandwidth.remaining_bytes,
    }
    data["disks"], data["networks"], data["metrics"] = [], [], None
    if account is not None and sandbox.status not in MOVING:
        try:
            data["metrics"] = metrics_json(account.metrics.sandbox_metrics(sandbox.id))
        except ApiError:  # gone meanwhile
            data["metrics"] = None
    if account is not None:
        resources_of = account.resources
        data["disks"] = [
            _hide_secrets(attachment_json(a))
            for a in resources_of.disks.live_attachments(sandbox=sandbox)
        ]
        data["networks"] = [
            {"id": n.id, "name": n.name, "cidr": str(n.cidr), "ip": n.members[sandbox.id].ip}
            for n in resources_of.networks.listing()
            if sandbox.id in n.members
        ]
    return data


def _execs(events: list[Event], origin: float) -> list[dict[str, Any]]:
    replies = {e.request_id: e for e in events if e.kind == "response" and e.request_id}
    execs = []
    for event in events:
        if event.kind != "request" or event.operation not in _EXEC_OPERATIONS:
            continue
        reply = replies.get(event.request_id) if event.request_id else None
        execs.append(
            {
                "t": event.time - origin,
                "request_id": event.request_id,
                "request": event.body,
                "status": reply.status if reply else None,
                "reply": reply.body if reply else None,
            }
        )
    return execs[-MAX_EXECS:]


def _files(sandbox: Sandbox, events: list[Event]) -> list[dict[str, Any]]:
    """Paths requests uploaded or downloaded, newest use last, and whether each exists now."""
    seen: dict[str, str] = {}
    for event in events:
        if event.kind == "request" and event.operation in _FILE_OPERATIONS and event.query:
            for path in parse_qs(event.query).get("path", []):
                seen.pop(path, None)
                seen[path] = event.operation or ""
    files = []
    for path, operation in seen.items():
        try:
            exists = sandbox.status != "destroyed" and sandbox.disk.is_file(path)
        except Exception:  # a path the runtime refuses is simply not there
            exists = False
        files.append({"path": path, "last": operation, "exists": exists})
    return files


def _preview_ports(events: list[Event]) -> list[int]:
    """Ports preview traffic reached (``/_ingress/{id}/{port}/...``), for clickable links."""
    ports: set[int] = set()
    for event in events:
        if event.kind == "request" and event.operation == "ingress" and event.path:
            parts = event.path[len(INGRESS_PREFIX) :].split("/")
            if len(parts) > 2 and parts[2].isdigit():
                ports.add(int(parts[2]))
    return sorted(ports)


def _hide_secrets(data: dict[str, Any]) -> dict[str, Any]:
    config = data.get("config")
    if isinstance(config, dict):
        data["config"] = {k: (REDACTED if secret_name(k) else v) for k, v in config.items()}
    return data


def resources(world: World, now: float) -> list[dict[str, Any]]:
    """Networks, disks and templates (with build logs so far) of every account."""
    found = []
    for account in world.accounts.values():
        found.append(_account_resources(account, now))
    return found


def _account_resources(account: Account, now: float) -> dict[str, Any]:
    held = account.resources
    templates = []
    for template in held.templates.listing():
        data = template_json(template, now)
        data["log"] = [
            {"offset": line.offset, "level": line.level, "line": line.line}
            for line in template.visible_log(now)
        ]
        templates.append(data)
    return {
        "account": account.id,
        "networks": [network_json(n) for n in held.networks.listing()],
        "disks": [_hide_secrets(disk_json(d)) for d in held.disks.listing()],
        "templates": templates,
    }


def next_build_change(world: World, now: float) -> float | None:
    """Fake seconds until a template build shows its next log line or ends, if one runs."""
    soonest: float | None = None
    for account in world.accounts.values():
        for template in account.resources.templates.listing():
            began = template.started + template.pending
            times = [began + line.offset for line in template.log]
            times += [began, template.finished_at()]
            future = [t - now for t in times if t > now]
            if future and (soonest is None or min(future) < soonest):
                soonest = min(future)
    return soonest
