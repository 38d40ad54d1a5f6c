"""The world's records as JSON-ready dicts and back: sandboxes, account resources, events.

Clock readings (``clock.now()``: monotonic, meaningless in another process) are stored as
wall times and turned back into readings of the new clock, so time spent stopped counts as
time passed (an auto-pause or a template build due meanwhile is due at once).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import operator
from typing import TYPE_CHECKING, Any

import orjson

from fake_server.models.bandwidth import Bandwidth
from fake_server.models.catalog import Shape
from fake_server.models.journal.events import Event
from fake_server.models.resources.disks import Attachment, Disk
from fake_server.models.resources.networks import Member, Network
from fake_server.models.resources.templates import LogLine, Template
from fake_server.models.sandbox import AccessToken, Sandbox, SandboxSpec
from fake_server.models.usage import RunningSpans

if TYPE_CHECKING:
    from collections.abc import Iterable

    from fake_server.clock import Clock
    from fake_server.models.context import Context
    from fake_server.runtime.api import Machine

__all__ = [
    "EVENT_FIELDS",
    "RESTORED_STATUS",
    "decode_event",
    "decode_network",
    "decode_sandbox",
    "decode_template",
    "encode_account",
    "encode_event",
    "encode_events",
    "encode_sandbox",
    "encode_template",
    "mark",
]

#: What a sandbox comes back as after a restart: nothing runs until it is resumed (a VM host
#: that went down); ``None``: it does not come back (destroyed already).
RESTORED_STATUS: dict[str, str | None] = {
    "creating": "paused",
    "running": "paused",
    "pausing": "paused",
    "paused": "paused",
    "resuming": "paused",
    "forking": "paused",
    "error": "error",
    "failed": "failed",
    "destroying": None,
    "destroyed": None,
}


def _wall(clock: Clock, reading: float | None) -> float | None:
    return None if reading is None else reading - clock.now() + clock.time()


def _reading(clock: Clock, wall: float | None) -> float | None:
    return None if wall is None else wall - clock.time() + clock.now()


# -- sandboxes --------------------------------------------------------------------------------

_SHAPE_FIELDS = tuple(f.name for f in dataclasses.fields(Shape))


def mark(sandbox: Sandbox) -> tuple[Any, ...]:
    """What a read (GET) may change in a sandbox: its settled status and their times."""
    return (sandbox.status, sandbox.running_at, sandbox.paused_at, sandbox.last_resumed_at)


def encode_sandbox(sandbox: Sandbox, directory: str | None) -> dict[str, Any]:
    """``directory``: the process runtime's directory name (``None`` for bashkit)."""
    spec = sandbox.spec
    token = sandbox.access_token
    return {
        "id": sandbox.id,
        "account_id": sandbox.account_id,
        "spec": {
            "shape": spec.shape,
            "rootfs": spec.rootfs,
            "region": spec.region,
            "name": spec.name,
            "ingress_enabled": spec.ingress_enabled,
            "envs": [list(pair) for pair in spec.envs],
            "extras": spec.extras,
        },
        "shape": {f: getattr(sandbox.shape, f) for f in _SHAPE_FIELDS},
        "name": sandbox.name,
        "ip": sandbox.ip,
        "spawn_ms": sandbox.spawn_ms,
        "runtime": sandbox.machine.runtime,
        "directory": directory,
        "envs": sandbox.envs,
        "ingress_enabled": sandbox.ingress_enabled,
        "egress": sandbox.egress,
        "ssh_pubkeys": sandbox.ssh_pubkeys,
        "auto_pause_after_seconds": sandbox.auto_pause_after_seconds,
        "disk_mib": sandbox.disk_mib,
        "forked_from": sandbox.forked_from,
        "fork_target": sandbox._fork_target,
        "access_token": None
        if token is None
        else {"token": token.token, "created_at": token.created_at, "rotated_at": token.rotated_at},
        "bandwidth": {
            "quota_bytes": sandbox.bandwidth.quota_bytes,
            "used_bytes": sandbox.bandwidth.used_bytes,
            "ingress_bytes": sandbox.bandwidth.ingress_bytes,
        },
        "last_activity": _wall(sandbox.clock, sandbox.last_activity),
        "created_at": sandbox.created_at,
        "running_at": sandbox.running_at,
        "paused_at": sandbox.paused_at,
        "last_resumed_at": sandbox.last_resumed_at,
        "status": sandbox.status,
    }


def decode_sandbox(data: dict[str, Any], machine: Machine, ctx: Context) -> Sandbox:
    """The sandbox ``data`` describes, settled in its restored status, with no processes.

    Built without ``Sandbox.__init__``, which would journal a new ``creating`` and start its
    timer; ``tests/fake_server/persist/test_persist.py`` checks every attribute it sets is set here.
    """
    status = RESTORED_STATUS[data["status"]]
    if status is None:
        raise ValueError("a destroyed sandbox is not restored")
    raw = data["spec"]
    spec = SandboxSpec(
        shape=raw["shape"],
        rootfs=raw["rootfs"],
        region=raw["region"],
        name=raw["name"],
        ingress_enabled=raw["ingress_enabled"],
        envs=tuple((str(k), str(v)) for k, v in raw["envs"]),
        extras=raw["extras"],
    )
    clock = ctx.clock
    sandbox = Sandbox.__new__(Sandbox)
    fields: dict[str, Any] = {
        "id": data["id"],
        "account_id": data["account_id"],
        "spec": spec,
        "shape": ctx.catalog.shapes.get(spec.shape) or Shape(**data["shape"]),
        "name": data["name"],
        "ip": data["ip"],
        "spawn_ms": data["spawn_ms"],
        "machine": machine,
        "disk": machine.disk,
        "ctx": ctx,
        "clock": clock,
        "envs": dict(data["envs"]),
        "ingress_enabled": data["ingress_enabled"],
        "_egress": [],
        "ssh_pubkeys": list(data["ssh_pubkeys"]),
        "auto_pause_after_seconds": data["auto_pause_after_seconds"],
        "_disk_mib": data["disk_mib"],  # not the setter: the runtime keeps its disk's size
        "forked_from": data["forked_from"],
        "_fork_target": data["fork_target"],
        "access_token": None
        if data["access_token"] is None
        else AccessToken(**data["access_token"]),
        "bandwidth": Bandwidth(**data["bandwidth"]),
        "last_activity": _reading(clock, data["last_activity"]),
        "created_at": data["created_at"],
        "running_at": data["running_at"],
        "paused_at": data["paused_at"],
        "last_resumed_at": data["last_resumed_at"],
        "destroyed_at": None,
        "destroyed_mono": None,
        "processes": {},
        "running": RunningSpans(),  # usage before a restart is not kept
        "status": status,
        "_pending": None,
        "_timer": None,
    }
    for name, value in fields.items():
        setattr(sandbox, name, value)
    machine.set_address(sandbox.ip)
    if status == "paused":
        machine.pause()
        if data["status"] != "paused":
            sandbox.paused_at = clock.time()
    sandbox.egress = list(data["egress"])  # the runtime is told (the process runtime's proxy)
    return sandbox


# -- account resources ------------------------------------------------------------------------


def encode_account(account: Any, clock: Clock) -> dict[str, Any]:
    """An account's id and key and its networks, disks, attachments and templates."""
    resources = account.resources
    return {
        "id": account.id,
        "key": account.api_key,
        "networks": [_encode_network(n) for n in resources.networks.items.values()],
        "disks": [dataclasses.asdict(d) for d in resources.disks.items.values()],
        "attachments": [
            {
                "disk": a.disk.id,
                "sandbox": a.sandbox.id,
                "mount_path": a.mount_path,
                "sub_path": a.sub_path,
                "status": a.status,
                "error": a.error,
            }
            for a in resources.disks.attachments
        ],
        "templates": [encode_template(t, clock) for t in resources.templates.items.values()],
    }


def _encode_network(network: Network) -> dict[str, Any]:
    return {
        "id": network.id,
        "name": network.name,
        "cidr": str(network.cidr),
        "created_at": network.created_at,
        "members": [[sandbox_id, m.ip] for sandbox_id, m in network.members.items()],
    }


def decode_network(data: dict[str, Any], sandboxes: dict[str, Sandbox]) -> Network:
    """The network, with the members whose sandbox came back (the caller wires them)."""
    network = Network(
        id=data["id"],
        name=data["name"],
        cidr=ipaddress.IPv4Network(data["cidr"]),
        created_at=data["created_at"],
    )
    for sandbox_id, ip in data["members"]:
        sandbox = sandboxes.get(sandbox_id)
        if sandbox is not None:
            network.members[sandbox_id] = Member(sandbox, ip)
    return network


def decode_disk(data: dict[str, Any]) -> Disk:
    return Disk(**data)


def decode_attachment(
    data: dict[str, Any], disks: dict[str, Disk], sandboxes: dict[str, Sandbox]
) -> Attachment | None:
    disk, sandbox = disks.get(data["disk"]), sandboxes.get(data["sandbox"])
    if disk is None or sandbox is None:
        return None
    return Attachment(
        disk, sandbox, data["mount_path"], data["sub_path"], data["status"], data["error"]
    )


def encode_template(template: Template, clock: Clock) -> dict[str, Any]:
    return {
        "id": template.id,
        "name": template.name,
        "base": template.base,
        "dockerfile": template.dockerfile,
        "created_at": template.created_at,
        "started": _wall(clock, template.started),
        "pending": template.pending,
        "duration": template.duration,
        "outcome": template.outcome,
        # an attempt's number follows its line's after the first attempt
        "log": [
            [line.offset, line.level, line.line, *([line.attempt] if line.attempt > 1 else [])]
            for line in template.log
        ],
        "env": template.env,
        "size": template.size,
        # ``true``: the files are a snapshot of their own; an object: what the runtime that
        # keeps them on disk needs to find them again (``Image.saved()``).
        "image": _image(template),
        # a build running in real time when saved (absent otherwise, as before such builds)
        **({"running": True} if template.running else {}),
        **({"attempt": template.attempt} if template.attempt > 1 else {}),
    }


def _image(template: Template) -> dict[str, Any] | bool:
    if template.image is None:
        return False
    saved = template.image.saved()
    return True if saved is None else saved


def decode_template(data: dict[str, Any], clock: Clock) -> Template:
    """The template without its image (the caller restores the files). A build that was
    still running comes back ``building`` as its next attempt, to start again from its
    Dockerfile once the fake serves (``Templates.resume_builds``)."""
    template = Template(
        id=data["id"],
        name=data["name"],
        base=data["base"],
        dockerfile=data["dockerfile"],
        created_at=data["created_at"],
        started=_reading(clock, data["started"]) or 0.0,
        pending=data["pending"],
        duration=data["duration"],
        outcome=data["outcome"],
        log=[LogLine(*entry) for entry in data["log"]],
        env=dict(data["env"]),
        size=data["size"],
        attempt=data.get("attempt", 1),
    )
    if data.get("running"):
        stopped = template.attempt
        template.attempt += 1
        template.running = template.interrupted = True
        # under way: past its pending time on this clock too (a virtual one starts again)
        template.started = min(template.started, clock.now() - template.pending)
        at = max(
            template.log[-1].offset if template.log else 0.0,
            clock.now() - template.started - template.pending,
        )
        template.log.append(
            LogLine(
                at,
                "warn",
                f"the fake stopped during build attempt {stopped}: building again from the "
                "Dockerfile",
                template.attempt,
            )
        )
    return template


# -- journal ----------------------------------------------------------------------------------


#: An event's fields in the order a saved batch lists them.
EVENT_FIELDS = tuple(f.name for f in dataclasses.fields(Event))
encode_event = operator.attrgetter(*EVENT_FIELDS)
"""An event as the tuple of its fields (a batch of them is one JSON array)."""


def encode_events(events: Iterable[Event]) -> str:
    """A batch of events as one JSON array, written by orjson: the journal keeps every
    request's headers and body, and json took three times as long over them, on the serving
    loop, per request. An event orjson refuses (a string holding a lone surrogate) is written
    by json, which escapes it. Events hold strings, integers, ``None`` and clock readings
    (finite floats), which both write alike and ``json.loads`` reads back."""
    values = [encode_event(e) for e in events]
    try:
        return orjson.dumps(values).decode()
    except orjson.JSONEncodeError:
        return json.dumps(values, separators=(",", ":"))


def decode_event(values: list[Any], offset: float, clock: Clock) -> Event:
    """``offset``: wall time minus clock reading when the batch was saved."""
    data = dict(zip(EVENT_FIELDS, values, strict=True))
    data["time"] = _reading(clock, data["time"] + offset)
    data["headers"] = tuple((str(k), str(v)) for k, v in data["headers"])
    return Event(**data)
