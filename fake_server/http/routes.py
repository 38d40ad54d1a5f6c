"""The route table: method, path template, operation name, handler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http import commands, meta, processes, sandboxes
from fake_server.http.resources_routes import RESOURCE_ROUTES

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aiohttp import web

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

__all__ = ["ROUTES", "UNIMPLEMENTED"]

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
    *RESOURCE_ROUTES,  # networks, disks, templates, computer use
)

#: Real API routes on paths the fake serves with other methods: without these they would be
#: 405 (which claims the method does not exist); they answer 501 ``not_implemented`` instead.
#: Unknown paths need no entry: every unmatched path is a 501.
UNIMPLEMENTED: tuple[tuple[str, str, str], ...] = (("PATCH", _SB, "update_sandbox"),)
