"""The service's operations as data: each route with the facts the layers act on.

The one list of the API's operations. Each is an ``Operation``: method, path template, name,
handler (``"family.name"``: the callable ``name`` of ``http.handlers.family``, bound in
``http/routes.py``) and its flags: served without a key (``open``), refused to a sandbox access
token (``token_denied``), gated on credit (``costs_credit``), what its reply streams
(``stream``), what body it takes (``body``) and how the dashboard shows it (``shown_as``). The
auth middleware, the body limits, the fault actions and the dashboard read these flags; no
other module lists operation names. It imports nothing of the fake, so every layer can read it.
A new route is one record here and its handler in ``http/handlers/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "API_ROUTES",
    "BY_NAME",
    "CONTROL_KEY_HEADER",
    "CREDENTIAL_HEADERS",
    "DERIVED",
    "KEY_HEADERS",
    "OPERATIONS",
    "RESOURCE_ROUTES",
    "ROUTES",
    "Operation",
    "exec_streamed",
    "named",
]

#: Headers the docs accept for an account's API key; clients use ``X-Api-Key``.
KEY_HEADERS: Final = ("X-Api-Key", "X-Auth-Token", "X-Access-Token")
#: The header carrying the control API's own credential (``FakeCreateOS.control_key``).
CONTROL_KEY_HEADER: Final = "X-Fake-Control-Key"
#: Every header the fake takes a credential of its own in, lower case: the journal redacts
#: them and a preview request does not forward them to the sandbox.
CREDENTIAL_HEADERS: Final = frozenset(h.lower() for h in (*KEY_HEADERS, CONTROL_KEY_HEADER))

#: What a reply streams: a process's numbered frames (``/connect``), an exec's NDJSON events,
#: or a file's bytes.
StreamKind = Literal["frames", "events", "bytes"]
#: What a request body is: JSON (read whole, up to the JSON limit), a file (read ahead up to a
#: disk file's size) or streamed through to the sandbox (never read ahead).
BodyKind = Literal["json", "file", "streamed"]
#: Which dashboard view lists the operation's calls.
ShownAs = Literal["files", "execs"]


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the API and the facts every layer reads about it."""

    method: str
    path: str
    #: The journal's and the faults' name; also the aiohttp route name.
    name: str
    #: ``"family.name"`` in ``http.handlers``; empty for operations no route carries.
    handler: str
    #: Served without an API key (the SDK calls them with ``skip_auth``; preview URLs are
    #: public, as in the service).
    open: bool = False
    #: Refused to a sandbox access token even on its own sandbox: managing credentials.
    token_denied: bool = False
    #: Gated on credit: 402 when the account has none (TS SDK ``COMPATIBILITY.md``).
    costs_credit: bool = False
    #: What the reply streams, written piece by piece (where stream faults apply); ``None``:
    #: a whole reply.
    stream: StreamKind | None = None
    body: BodyKind = "json"
    shown_as: ShownAs | None = None


def _route(method: str, path: str, name: str, handler: str, **flags: object) -> Operation:
    return Operation(method, path, name, handler, **flags)  # type: ignore[arg-type]


_SB = "/v1/sandboxes/{sandbox_id}"
_PROC = _SB + "/processes/{process_id}"
_NET = "/v1/networks/{network_id}"
_DISK = "/v1/disks/{disk_id}"
_TPL = "/v1/templates/{template_id}"
_C = _SB + "/computer"
_W = _C + "/windows/{window_id}"
_S = _C + "/screens/{screen_id}"

#: Sandboxes, commands, processes, their settings, access tokens, metrics, preview traffic.
API_ROUTES: Final[tuple[Operation, ...]] = (
    _route("GET", "/healthz", "health", "meta.health", open=True),
    _route("GET", "/readyz", "readiness", "meta.readiness", open=True),
    _route("GET", "/v1/shapes", "list_shapes", "meta.list_shapes", open=True),
    _route("GET", "/v1/rootfs", "list_rootfs", "meta.list_rootfs", open=True),
    _route("GET", "/v1/whoami", "whoami", "meta.whoami"),
    _route(
        "POST", "/v1/sandboxes", "create_sandbox", "sandboxes.create_sandbox", costs_credit=True
    ),
    _route("GET", "/v1/sandboxes", "list_sandboxes", "sandboxes.list_sandboxes"),
    _route("GET", _SB, "get_sandbox", "sandboxes.get_sandbox"),
    _route("DELETE", _SB, "delete_sandbox", "sandboxes.delete_sandbox"),
    _route("POST", _SB + "/pause", "pause_sandbox", "sandboxes.pause_sandbox"),
    _route(
        "POST", _SB + "/resume", "resume_sandbox", "sandboxes.resume_sandbox", costs_credit=True
    ),
    _route("POST", _SB + "/exec", "exec", "commands.exec_command", shown_as="execs"),
    _route(
        "PUT", _SB + "/files", "upload_file", "commands.upload_file", body="file", shown_as="files"
    ),
    _route(
        "GET",
        _SB + "/files",
        "download_file",
        "commands.download_file",
        stream="bytes",
        shown_as="files",
    ),
    _route("POST", _SB + "/processes", "create_process", "processes.create_process"),
    _route("GET", _SB + "/processes", "list_processes", "processes.list_processes"),
    _route("GET", _PROC, "get_process", "processes.get_process"),
    _route("DELETE", _PROC, "kill_process", "processes.kill_process"),
    _route(
        "GET", _PROC + "/connect", "connect_process", "processes.connect_process", stream="frames"
    ),
    _route("POST", _PROC + "/input", "write_process_input", "processes.write_process_input"),
    _route("POST", _PROC + "/stdin/close", "close_process_stdin", "processes.close_process_stdin"),
    _route("POST", _PROC + "/signal", "signal_process", "processes.signal_process"),
    _route("GET", _PROC + "/wait", "wait_process", "processes.wait_process"),
    _route("POST", _PROC + "/resize", "resize_process", "sandbox_admin.resize_process"),
    _route("PATCH", _SB, "update_sandbox", "sandbox_admin.update_sandbox"),
    _route("POST", _SB + "/fork", "fork_sandbox", "sandbox_admin.fork_sandbox", costs_credit=True),
    _route("POST", _SB + "/resize", "resize_sandbox", "sandbox_admin.resize_sandbox"),
    _route("POST", _SB + "/ssh-pubkeys", "add_ssh_pubkeys", "sandbox_admin.add_ssh_pubkeys"),
    _route("GET", _SB + "/egress", "get_egress", "sandbox_admin.get_egress"),
    _route("PUT", _SB + "/egress", "set_egress", "sandbox_admin.set_egress"),
    _route("GET", _SB + "/bandwidth", "get_bandwidth", "sandbox_admin.get_bandwidth"),
    _route(
        "POST",
        _SB + "/bandwidth/recharge",
        "recharge_bandwidth",
        "sandbox_admin.recharge_bandwidth",
        costs_credit=True,
    ),
    _route(
        "GET", "/v1/sandboxes/by-ip/{ip}", "get_sandbox_by_ip", "sandbox_admin.get_sandbox_by_ip"
    ),
    _route("GET", "/v1/hosts", "list_hosts", "sandbox_admin.list_hosts"),
    _route(
        "POST",
        _SB + "/access-token",
        "create_access_token",
        "access_tokens.create_access_token",
        token_denied=True,
    ),
    _route(
        "GET",
        _SB + "/access-token",
        "get_access_token",
        "access_tokens.get_access_token",
        token_denied=True,
    ),
    _route(
        "POST",
        _SB + "/access-token/rotate",
        "rotate_access_token",
        "access_tokens.rotate_access_token",
        token_denied=True,
    ),
    _route(
        "DELETE",
        _SB + "/access-token",
        "disable_access_token",
        "access_tokens.disable_access_token",
        token_denied=True,
    ),
    _route("GET", _SB + "/shell-ws", "shell_ws", "shells.shell_ws"),
    _route("POST", _SB + "/shell", "shell", "shells.shell"),
    _route("POST", _SB + "/tunnel/{port}", "tunnel", "tunnels.tunnel"),
    _route("GET", _SB + "/metrics", "get_sandbox_metrics", "metrics.sandbox_metrics"),
    _route("GET", "/v1/metrics", "get_account_metrics", "metrics.account_metrics"),
    _route("GET", "/v1/metrics/timeseries", "get_account_timeseries", "metrics.account_timeseries"),
    _route(
        "*",
        "/_ingress/{sandbox_id}/{port}/{tail:.*}",
        "ingress",
        "ingress.ingress",
        open=True,
        body="streamed",
    ),
)

#: The account resources: networks, disks, templates, and computer use on desktop sandboxes.
RESOURCE_ROUTES: Final[tuple[Operation, ...]] = (
    _route("GET", "/v1/networks", "list_networks", "networks.list_networks"),
    _route("POST", "/v1/networks", "create_network", "networks.create_network", costs_credit=True),
    _route("GET", _NET, "get_network", "networks.get_network"),
    _route("DELETE", _NET, "delete_network", "networks.delete_network"),
    _route("POST", _SB + "/networks", "attach_network", "networks.attach_network"),
    _route(
        "DELETE",
        _SB + "/networks/{network_id}",
        "detach_network",
        "networks.detach_network",
    ),
    _route("GET", "/v1/disks", "list_disks", "disks.list_disks"),
    _route("POST", "/v1/disks", "create_disk", "disks.create_disk", costs_credit=True),
    _route("GET", _DISK, "get_disk", "disks.get_disk"),
    _route("DELETE", _DISK, "delete_disk", "disks.delete_disk"),
    _route("PATCH", _DISK, "rotate_disk_credentials", "disks.rotate_disk_credentials"),
    _route("GET", _SB + "/disks", "list_sandbox_disks", "disks.list_sandbox_disks"),
    _route("POST", _SB + "/disks", "attach_disk", "disks.attach_disk"),
    _route("DELETE", _SB + "/disks/{disk_id}", "detach_disk", "disks.detach_disk"),
    _route("GET", "/v1/templates", "list_templates", "templates.list_templates"),
    _route(
        "POST", "/v1/templates", "create_template", "templates.create_template", costs_credit=True
    ),
    _route("GET", _TPL, "get_template", "templates.get_template"),
    _route("DELETE", _TPL, "delete_template", "templates.delete_template"),
    _route("GET", _TPL + "/logs", "template_logs", "templates.template_logs"),
    # computer use
    _route("GET", _C + "/screen", "computer_screen", "computer.get_screen"),
    _route("GET", _C + "/cursor", "computer_cursor", "computer.get_cursor"),
    _route("GET", _C + "/clipboard", "computer_get_clipboard", "computer.get_clipboard"),
    _route("PUT", _C + "/clipboard", "computer_set_clipboard", "computer.set_clipboard"),
    _route("POST", _C + "/open", "computer_open", "computer.open_target"),
    _route("POST", _C + "/launch", "computer_launch", "computer.launch_app"),
    _route("GET", _C + "/screenshot", "computer_screenshot", "computer.take_screenshot"),
    _route("POST", _C + "/mouse/move", "mouse_move", "computer.mouse_move"),
    _route("POST", _C + "/mouse/click", "mouse_click", "computer.mouse_click"),
    _route("POST", _C + "/mouse/scroll", "mouse_scroll", "computer.mouse_scroll"),
    _route("POST", _C + "/mouse/drag", "mouse_drag", "computer.mouse_drag"),
    _route("POST", _C + "/mouse/down", "mouse_down", "computer.mouse_down"),
    _route("POST", _C + "/mouse/up", "mouse_up", "computer.mouse_up"),
    _route("POST", _C + "/keyboard/type", "keyboard_type", "computer.keyboard_type"),
    _route("POST", _C + "/keyboard/press", "keyboard_press", "computer.keyboard_press"),
    _route("POST", _C + "/keyboard/down", "keyboard_down", "computer.keyboard_down"),
    _route("POST", _C + "/keyboard/up", "keyboard_up", "computer.keyboard_up"),
    _route("GET", _C + "/windows", "list_windows", "computer.list_windows"),
    _route("GET", _C + "/windows/current", "current_window", "computer.current_window"),
    _route("GET", _W, "get_window", "computer.get_window"),
    _route("GET", _W + "/geometry", "window_geometry", "computer.window_geometry"),
    _route("POST", _W + "/focus", "focus_window", "computer.focus_window"),
    _route("POST", _W + "/move", "move_window", "computer.move_window"),
    _route("POST", _W + "/resize", "resize_window", "computer.resize_window"),
    _route("POST", _W + "/maximize", "maximize_window", "computer.maximize_window"),
    _route("POST", _W + "/minimize", "minimize_window", "computer.minimize_window"),
    _route("POST", _W + "/restore", "restore_window", "computer.restore_window"),
    _route("DELETE", _W, "close_window", "computer.close_window"),
    _route("GET", _C + "/screens", "list_screens", "computer.list_screens"),
    _route("POST", _C + "/screens", "create_screen", "computer.create_screen"),
    _route("GET", _S, "get_screen", "computer.get_screen_by_id"),
    _route("GET", _S + "/connect", "connect_screen", "computer.connect_screen"),
    _route("POST", _S + "/resize", "resize_screen", "computer.resize_screen"),
    _route("DELETE", _S, "delete_screen", "computer.delete_screen"),
)

#: Every route, in the order the router tries them.
ROUTES: Final[tuple[Operation, ...]] = API_ROUTES + RESOURCE_ROUTES

#: Operations no route carries: ``exec`` that streams (``exec_streamed``) and unmatched
#: requests (``http.middlewares.operation_of``).
DERIVED: Final[tuple[Operation, ...]] = (
    Operation("POST", _SB + "/exec", "exec_stream", "", stream="events", shown_as="execs"),
    Operation("*", "", "not_implemented", "", open=True),
    Operation("*", "", "method_not_allowed", "", open=True),
)

#: Every operation by name (``"*"`` in a ``Fault`` means all of them).
BY_NAME: Final[Mapping[str, Operation]] = {op.name: op for op in ROUTES + DERIVED}

#: What the journal and faults call requests.
OPERATIONS: Final = frozenset(BY_NAME)


def named(**flags: object) -> frozenset[str]:
    """The names of the operations whose flags have these values, e.g. ``named(open=True)``."""
    return frozenset(
        op.name
        for op in BY_NAME.values()
        if all(getattr(op, flag) == value for flag, value in flags.items())
    )


def exec_streamed(query_stream: str | None, body_stream: object) -> bool:
    """Whether an ``exec`` streams its output: ``?stream=true`` (or ``1``) or body
    ``stream: true``; the one place this is decided (the journal's ``exec_stream``)."""
    return body_stream is True or (query_stream or "").lower() in ("true", "1")
