"""The service's routes as data: method, path template, operation name, handler.

The one list of the API's operations. The HTTP layer serves these routes, binding each handler
(``"family.name"``: the callable ``name`` of ``http.handlers.family``) in ``http/routes.py``;
the fault layer checks a ``Fault``'s operation against ``OPERATIONS``; the journal, the
dashboard and the rate limits name requests by them. It imports nothing of the fake, so every
layer can read it. A new route is one row here and its handler in ``http/``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["API_ROUTES", "DERIVED_OPERATIONS", "OPERATIONS", "RESOURCE_ROUTES", "ROUTES", "Row"]

#: ``(method, path template, operation, handler)``; the operation is also the aiohttp route name.
Row = tuple[str, str, str, str]

_SB = "/v1/sandboxes/{sandbox_id}"
_PROC = _SB + "/processes/{process_id}"
_NET = "/v1/networks/{network_id}"
_DISK = "/v1/disks/{disk_id}"
_TPL = "/v1/templates/{template_id}"
_C = _SB + "/computer"
_W = _C + "/windows/{window_id}"
_S = _C + "/screens/{screen_id}"

#: Sandboxes, commands, processes, their settings, access tokens, metrics, preview traffic.
API_ROUTES: Final[tuple[Row, ...]] = (
    ("GET", "/healthz", "health", "meta.health"),
    ("GET", "/readyz", "readiness", "meta.readiness"),
    ("GET", "/v1/shapes", "list_shapes", "meta.list_shapes"),
    ("GET", "/v1/rootfs", "list_rootfs", "meta.list_rootfs"),
    ("GET", "/v1/whoami", "whoami", "meta.whoami"),
    ("POST", "/v1/sandboxes", "create_sandbox", "sandboxes.create_sandbox"),
    ("GET", "/v1/sandboxes", "list_sandboxes", "sandboxes.list_sandboxes"),
    ("GET", _SB, "get_sandbox", "sandboxes.get_sandbox"),
    ("DELETE", _SB, "delete_sandbox", "sandboxes.delete_sandbox"),
    ("POST", _SB + "/pause", "pause_sandbox", "sandboxes.pause_sandbox"),
    ("POST", _SB + "/resume", "resume_sandbox", "sandboxes.resume_sandbox"),
    ("POST", _SB + "/exec", "exec", "commands.exec_command"),
    ("PUT", _SB + "/files", "upload_file", "commands.upload_file"),
    ("GET", _SB + "/files", "download_file", "commands.download_file"),
    ("POST", _SB + "/processes", "create_process", "processes.create_process"),
    ("GET", _SB + "/processes", "list_processes", "processes.list_processes"),
    ("GET", _PROC, "get_process", "processes.get_process"),
    ("DELETE", _PROC, "kill_process", "processes.kill_process"),
    ("GET", _PROC + "/connect", "connect_process", "processes.connect_process"),
    ("POST", _PROC + "/input", "write_process_input", "processes.write_process_input"),
    ("POST", _PROC + "/stdin/close", "close_process_stdin", "processes.close_process_stdin"),
    ("POST", _PROC + "/signal", "signal_process", "processes.signal_process"),
    ("GET", _PROC + "/wait", "wait_process", "processes.wait_process"),
    ("POST", _PROC + "/resize", "resize_process", "sandbox_admin.resize_process"),
    ("PATCH", _SB, "update_sandbox", "sandbox_admin.update_sandbox"),
    ("POST", _SB + "/fork", "fork_sandbox", "sandbox_admin.fork_sandbox"),
    ("POST", _SB + "/resize", "resize_sandbox", "sandbox_admin.resize_sandbox"),
    ("POST", _SB + "/ssh-pubkeys", "add_ssh_pubkeys", "sandbox_admin.add_ssh_pubkeys"),
    ("GET", _SB + "/egress", "get_egress", "sandbox_admin.get_egress"),
    ("PUT", _SB + "/egress", "set_egress", "sandbox_admin.set_egress"),
    ("GET", _SB + "/bandwidth", "get_bandwidth", "sandbox_admin.get_bandwidth"),
    ("POST", _SB + "/bandwidth/recharge", "recharge_bandwidth", "sandbox_admin.recharge_bandwidth"),
    ("GET", "/v1/sandboxes/by-ip/{ip}", "get_sandbox_by_ip", "sandbox_admin.get_sandbox_by_ip"),
    ("GET", "/v1/hosts", "list_hosts", "sandbox_admin.list_hosts"),
    ("POST", _SB + "/access-token", "create_access_token", "access_tokens.create_access_token"),
    ("GET", _SB + "/access-token", "get_access_token", "access_tokens.get_access_token"),
    (
        "POST",
        _SB + "/access-token/rotate",
        "rotate_access_token",
        "access_tokens.rotate_access_token",
    ),
    ("DELETE", _SB + "/access-token", "disable_access_token", "access_tokens.disable_access_token"),
    ("GET", _SB + "/shell-ws", "shell_ws", "shells.shell_ws"),
    ("POST", _SB + "/shell", "shell", "shells.shell"),
    ("POST", _SB + "/tunnel/{port}", "tunnel", "tunnels.tunnel"),
    ("GET", _SB + "/metrics", "get_sandbox_metrics", "metrics.sandbox_metrics"),
    ("GET", "/v1/metrics", "get_account_metrics", "metrics.account_metrics"),
    ("GET", "/v1/metrics/timeseries", "get_account_timeseries", "metrics.account_timeseries"),
    ("*", "/_ingress/{sandbox_id}/{port}/{tail:.*}", "ingress", "ingress.ingress"),
)

#: The account resources: networks, disks, templates, and computer use on desktop sandboxes.
RESOURCE_ROUTES: Final[tuple[Row, ...]] = (
    ("GET", "/v1/networks", "list_networks", "networks.list_networks"),
    ("POST", "/v1/networks", "create_network", "networks.create_network"),
    ("GET", _NET, "get_network", "networks.get_network"),
    ("DELETE", _NET, "delete_network", "networks.delete_network"),
    ("POST", _SB + "/networks", "attach_network", "networks.attach_network"),
    (
        "DELETE",
        _SB + "/networks/{network_id}",
        "detach_network",
        "networks.detach_network",
    ),
    ("GET", "/v1/disks", "list_disks", "disks.list_disks"),
    ("POST", "/v1/disks", "create_disk", "disks.create_disk"),
    ("GET", _DISK, "get_disk", "disks.get_disk"),
    ("DELETE", _DISK, "delete_disk", "disks.delete_disk"),
    ("PATCH", _DISK, "rotate_disk_credentials", "disks.rotate_disk_credentials"),
    ("GET", _SB + "/disks", "list_sandbox_disks", "disks.list_sandbox_disks"),
    ("POST", _SB + "/disks", "attach_disk", "disks.attach_disk"),
    ("DELETE", _SB + "/disks/{disk_id}", "detach_disk", "disks.detach_disk"),
    ("GET", "/v1/templates", "list_templates", "templates.list_templates"),
    ("POST", "/v1/templates", "create_template", "templates.create_template"),
    ("GET", _TPL, "get_template", "templates.get_template"),
    ("DELETE", _TPL, "delete_template", "templates.delete_template"),
    ("GET", _TPL + "/logs", "template_logs", "templates.template_logs"),
    # computer use
    ("GET", _C + "/screen", "computer_screen", "computer.get_screen"),
    ("GET", _C + "/cursor", "computer_cursor", "computer.get_cursor"),
    ("GET", _C + "/clipboard", "computer_get_clipboard", "computer.get_clipboard"),
    ("PUT", _C + "/clipboard", "computer_set_clipboard", "computer.set_clipboard"),
    ("POST", _C + "/open", "computer_open", "computer.open_target"),
    ("POST", _C + "/launch", "computer_launch", "computer.launch_app"),
    ("GET", _C + "/screenshot", "computer_screenshot", "computer.take_screenshot"),
    ("POST", _C + "/mouse/move", "mouse_move", "computer.mouse_move"),
    ("POST", _C + "/mouse/click", "mouse_click", "computer.mouse_click"),
    ("POST", _C + "/mouse/scroll", "mouse_scroll", "computer.mouse_scroll"),
    ("POST", _C + "/mouse/drag", "mouse_drag", "computer.mouse_drag"),
    ("POST", _C + "/mouse/down", "mouse_down", "computer.mouse_down"),
    ("POST", _C + "/mouse/up", "mouse_up", "computer.mouse_up"),
    ("POST", _C + "/keyboard/type", "keyboard_type", "computer.keyboard_type"),
    ("POST", _C + "/keyboard/press", "keyboard_press", "computer.keyboard_press"),
    ("POST", _C + "/keyboard/down", "keyboard_down", "computer.keyboard_down"),
    ("POST", _C + "/keyboard/up", "keyboard_up", "computer.keyboard_up"),
    ("GET", _C + "/windows", "list_windows", "computer.list_windows"),
    ("GET", _C + "/windows/current", "current_window", "computer.current_window"),
    ("GET", _W, "get_window", "computer.get_window"),
    ("GET", _W + "/geometry", "window_geometry", "computer.window_geometry"),
    ("POST", _W + "/focus", "focus_window", "computer.focus_window"),
    ("POST", _W + "/move", "move_window", "computer.move_window"),
    ("POST", _W + "/resize", "resize_window", "computer.resize_window"),
    ("POST", _W + "/maximize", "maximize_window", "computer.maximize_window"),
    ("POST", _W + "/minimize", "minimize_window", "computer.minimize_window"),
    ("POST", _W + "/restore", "restore_window", "computer.restore_window"),
    ("DELETE", _W, "close_window", "computer.close_window"),
    ("GET", _C + "/screens", "list_screens", "computer.list_screens"),
    ("POST", _C + "/screens", "create_screen", "computer.create_screen"),
    ("GET", _S, "get_screen", "computer.get_screen_by_id"),
    ("GET", _S + "/connect", "connect_screen", "computer.connect_screen"),
    ("POST", _S + "/resize", "resize_screen", "computer.resize_screen"),
    ("DELETE", _S, "delete_screen", "computer.delete_screen"),
)

#: Every route, in the order the router tries them.
ROUTES: Final[tuple[Row, ...]] = API_ROUTES + RESOURCE_ROUTES

#: Operation names no route carries: ``exec`` with ``?stream=true`` and unmatched requests
#: (``http.middlewares.operation_of``).
DERIVED_OPERATIONS: Final = frozenset({"exec_stream", "not_implemented", "method_not_allowed"})

#: What the journal and faults call requests (``"*"`` in a ``Fault`` means all of them).
OPERATIONS: Final = frozenset(operation for _, _, operation, _ in ROUTES) | DERIVED_OPERATIONS
