"""The route table: method, path template, operation name, handler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http import (
    access_tokens,
    commands,
    ingress,
    meta,
    metrics,
    processes,
    sandbox_admin,
    sandboxes,
    shells,
)
from fake_server.http.resources_routes import RESOURCE_ROUTES

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aiohttp import web

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

__all__ = ["CONTROL_KEY_HEADER", "CONTROL_PREFIX", "KEY_HEADERS", "ROUTES", "UNIMPLEMENTED"]

#: Where the fake's own control API lives (``http.control``, ``http.fault_control``).
CONTROL_PREFIX = "/_fake"
#: The header carrying the control API's own credential (``FakeCreateOS.control_key``).
CONTROL_KEY_HEADER = "X-Fake-Control-Key"
#: Headers the docs accept for an account's API key; clients use ``X-Api-Key``.
KEY_HEADERS = ("X-Api-Key", "X-Auth-Token", "X-Access-Token")

_SB = "/v1/sandboxes/{sandbox_id}"
_PROC = _SB + "/processes/{process_id}"

#: ``(method, path, operation, handler)``; the operation is also the aiohttp route name.
ROUTES: tuple[tuple[str, str, str, Handler], ...] = (
    ("GET", "/healthz", "health", meta.health),
    ("GET", "/readyz", "readiness", meta.readiness),
    ("GET", "/v1/shapes", "list_shapes", meta.list_shapes),
    ("GET", "/v1/rootfs", "list_rootfs", meta.list_rootfs),
    ("GET", "/v1/whoami", "whoami", meta.whoami),
    ("POST", "/v1/sandboxes", "create_sandbox", sandboxes.create_sandbox),
    ("GET", "/v1/sandboxes", "list_sandboxes", sandboxes.list_sandboxes),
    ("GET", _SB, "get_sandbox", sandboxes.get_sandbox),
    ("DELETE", _SB, "delete_sandbox", sandboxes.delete_sandbox),
    ("POST", _SB + "/pause", "pause_sandbox", sandboxes.pause_sandbox),
    ("POST", _SB + "/resume", "resume_sandbox", sandboxes.resume_sandbox),
    ("POST", _SB + "/exec", "exec", commands.exec_command),
    ("PUT", _SB + "/files", "upload_file", commands.upload_file),
    ("GET", _SB + "/files", "download_file", commands.download_file),
    ("POST", _SB + "/processes", "create_process", processes.create_process),
    ("GET", _SB + "/processes", "list_processes", processes.list_processes),
    ("GET", _PROC, "get_process", processes.get_process),
    ("DELETE", _PROC, "kill_process", processes.kill_process),
    ("GET", _PROC + "/connect", "connect_process", processes.connect_process),
    ("POST", _PROC + "/input", "write_process_input", processes.write_process_input),
    ("POST", _PROC + "/stdin/close", "close_process_stdin", processes.close_process_stdin),
    ("POST", _PROC + "/signal", "signal_process", processes.signal_process),
    ("GET", _PROC + "/wait", "wait_process", processes.wait_process),
    ("POST", _PROC + "/resize", "resize_process", sandbox_admin.resize_process),
    ("PATCH", _SB, "update_sandbox", sandbox_admin.update_sandbox),
    ("POST", _SB + "/fork", "fork_sandbox", sandbox_admin.fork_sandbox),
    ("POST", _SB + "/resize", "resize_sandbox", sandbox_admin.resize_sandbox),
    ("POST", _SB + "/ssh-pubkeys", "add_ssh_pubkeys", sandbox_admin.add_ssh_pubkeys),
    ("GET", _SB + "/egress", "get_egress", sandbox_admin.get_egress),
    ("PUT", _SB + "/egress", "set_egress", sandbox_admin.set_egress),
    ("GET", _SB + "/bandwidth", "get_bandwidth", sandbox_admin.get_bandwidth),
    ("POST", _SB + "/bandwidth/recharge", "recharge_bandwidth", sandbox_admin.recharge_bandwidth),
    ("GET", "/v1/sandboxes/by-ip/{ip}", "get_sandbox_by_ip", sandbox_admin.get_sandbox_by_ip),
    ("GET", "/v1/hosts", "list_hosts", sandbox_admin.list_hosts),
    ("POST", _SB + "/access-token", "create_access_token", access_tokens.create_access_token),
    ("GET", _SB + "/access-token", "get_access_token", access_tokens.get_access_token),
    (
        "POST",
        _SB + "/access-token/rotate",
        "rotate_access_token",
        access_tokens.rotate_access_token,
    ),
    ("DELETE", _SB + "/access-token", "disable_access_token", access_tokens.disable_access_token),
    ("GET", _SB + "/shell-ws", "shell_ws", shells.shell_ws),
    ("GET", _SB + "/metrics", "get_sandbox_metrics", metrics.sandbox_metrics),
    ("GET", "/v1/metrics", "get_account_metrics", metrics.account_metrics),
    ("GET", "/v1/metrics/timeseries", "get_account_timeseries", metrics.account_timeseries),
    ("*", "/_ingress/{sandbox_id}/{port}/{tail:.*}", "ingress", ingress.ingress),
    *RESOURCE_ROUTES,  # networks, disks, templates, computer use
)

#: Real API routes on paths the fake serves with other methods: without these they would be
#: 405 (which claims the method does not exist); they answer 501 ``not_implemented`` instead.
#: Unknown paths need no entry: every unmatched path is a 501.
UNIMPLEMENTED: tuple[tuple[str, str, str], ...] = ()


def is_control(request: web.Request) -> bool:
    """Whether ``request`` is for the control API (matched or not)."""
    path = request.path
    return path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/")
