"""Handlers for a sandbox's settings: PATCH, fork, resize, SSH keys, egress, bandwidth,
lookup by IP and the host list (preview URLs: ``fake_server.http.handlers.ingress``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http.errors import ok
from fake_server.http.forkgate import copying
from fake_server.http.handlers.sandboxes import POLL_AFTER, origin
from fake_server.http.keys import BACKEND_KEY, STATE_KEY, sandbox_id
from fake_server.http.wire.common import opt_int, query_int, read_json, str_list, str_map
from fake_server.http.wire.processes import process_json
from fake_server.http.wire.sandboxes import sandbox_json
from fake_server.models import BadRequest
from fake_server.models.account.admin import ForkSpec, SandboxPatch
from fake_server.models.paging import page

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

    from fake_server.models import Sandbox

__all__ = [
    "add_ssh_pubkeys",
    "fork_sandbox",
    "get_bandwidth",
    "get_egress",
    "get_sandbox_by_ip",
    "list_hosts",
    "recharge_bandwidth",
    "resize_process",
    "resize_sandbox",
    "set_egress",
    "update_sandbox",
]


def _opt_bool(body: Mapping[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise BadRequest("must be a boolean", field=name)
    return value


def _opt_list(body: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    return None if body.get(name) is None else str_list(body, name)


def _required_int(body: Mapping[str, Any], name: str) -> int:
    value = opt_int(body, name)
    if value is None:
        raise BadRequest("is required", field=name)
    return value


async def update_sandbox(request: web.Request) -> web.Response:
    body = await read_json(request)
    known = {"ingress_enabled", "auto_pause_after_seconds", "disable_auto_pause"}
    if not known & body.keys():
        raise BadRequest("must set ingress_enabled or auto-pause", field="body")
    patch = SandboxPatch(
        ingress_enabled=_opt_bool(body, "ingress_enabled"),
        auto_pause_after_seconds=opt_int(body, "auto_pause_after_seconds"),
        disable_auto_pause=bool(_opt_bool(body, "disable_auto_pause")),
    )
    sandbox = request[BACKEND_KEY].admin.update_sandbox(sandbox_id(request), patch)
    return ok(sandbox_json(sandbox, origin(request)))


async def fork_sandbox(request: web.Request) -> web.Response:
    body = await read_json(request, optional=True)
    envs = body.get("envs")
    spec = ForkSpec(
        start_paused=bool(_opt_bool(body, "start_paused")),
        ssh_pubkeys=_opt_list(body, "ssh_pubkeys"),
        egress=_opt_list(body, "egress"),
        ingress_enabled=_opt_bool(body, "ingress_enabled"),
        envs=None if envs is None else str_map(body, "envs"),
        bandwidth_quota_bytes=opt_int(body, "bandwidth_quota_bytes"),
    )
    admin, name = request[BACKEND_KEY].admin, sandbox_id(request)
    try:
        async with copying(request.app[STATE_KEY], name):  # the source kept as it is
            source = admin.check_fork(name, spec)
            machine = await source.machine.fork_async()  # off the loop
    except OSError:
        raise admin.fork_failed(name, spec) from None
    child = admin.fork_sandbox(name, spec, machine)
    data = sandbox_json(child, origin(request))
    if child.status == "forking":
        return ok(data, headers={"X-Poll-After": POLL_AFTER})  # 200, like pause and resume
    return ok(data)


async def resize_sandbox(request: web.Request) -> web.Response:
    disk_mib = _required_int(await read_json(request), "disk_mib")
    sandbox = request[BACKEND_KEY].admin.resize_sandbox(sandbox_id(request), disk_mib)
    return ok({"id": sandbox.id, "disk_mib": sandbox.disk_mib})


async def add_ssh_pubkeys(request: web.Request) -> web.Response:
    body = await read_json(request)
    if body.get("keys") is None:
        raise BadRequest("is required", field="keys")
    sandbox = request[BACKEND_KEY].admin.add_ssh_pubkeys(
        sandbox_id(request), str_list(body, "keys")
    )
    return ok({"id": sandbox.id, "count": len(sandbox.ssh_pubkeys)})


def _egress(sandbox: Sandbox) -> dict[str, Any]:
    return {"id": sandbox.id, "egress": list(sandbox.egress)}


async def get_egress(request: web.Request) -> web.Response:
    return ok(_egress(request[BACKEND_KEY].admin.get_egress(sandbox_id(request))))


async def set_egress(request: web.Request) -> web.Response:
    """``null``, an omitted field and ``[]`` all replace the rules with none: allow-all (TS
    ``SetEgressRequest``, how-to/lifecycle.md; langflow measured ``null`` as allow-all)."""
    rules = str_list(await read_json(request), "egress")
    return ok(_egress(request[BACKEND_KEY].admin.set_egress(sandbox_id(request), rules)))


def _bandwidth(sandbox: Sandbox) -> dict[str, Any]:
    b = sandbox.bandwidth
    return {
        "id": sandbox.id,
        "quota_bytes": b.quota_bytes,
        "used_bytes": b.used_bytes,
        "ingress_bytes": b.ingress_bytes,
        "remaining_bytes": b.remaining_bytes,
        "capped": b.capped,
    }


async def get_bandwidth(request: web.Request) -> web.Response:
    return ok(_bandwidth(request[BACKEND_KEY].admin.get_bandwidth(sandbox_id(request))))


async def recharge_bandwidth(request: web.Request) -> web.Response:
    add_bytes = _required_int(await read_json(request), "add_bytes")
    return ok(
        _bandwidth(request[BACKEND_KEY].admin.recharge_bandwidth(sandbox_id(request), add_bytes))
    )


async def get_sandbox_by_ip(request: web.Request) -> web.Response:
    sandbox = request[BACKEND_KEY].admin.sandbox_by_ip(request.match_info["ip"])
    return ok(sandbox_json(sandbox, origin(request)))


async def list_hosts(request: web.Request) -> web.Response:
    hosts = request[BACKEND_KEY].admin.hosts()
    shown, pagination = page(
        hosts, query_int(request, "limit", 50), query_int(request, "offset", 0)
    )
    data = [
        {
            "id": h.id,
            "status": h.status,
            "region": h.region,
            "free_mib": h.free_mib,
            "vm_count": h.vm_count,
            "rootfses": list(h.rootfses),
        }
        for h in shown
    ]
    return ok({"data": data, "pagination": pagination})


async def resize_process(request: web.Request) -> web.Response:
    """A PTY's window size (``POST …/processes/{id}/resize`` with ``rows`` and ``cols``)."""
    body = await read_json(request)
    rows, cols = _required_int(body, "rows"), _required_int(body, "cols")
    ids = sandbox_id(request), request.match_info["process_id"]
    process = request[BACKEND_KEY].processes.resize_process(*ids, rows, cols)
    return ok(process_json(process))
