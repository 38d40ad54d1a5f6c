"""``/_fake/faults``: the fault API for non-Python users (curl, other languages, CI scripts).

* ``GET /_fake/faults`` lists armed faults with their fire counts, the firings and the ids of
  faults that were expected to fire but have not;
* ``POST /_fake/faults`` arms one fault from a JSON spec (see ``fake_server.faults.spec``) or a
  list of specs, answering 201 with the armed faults and their ids;
* ``DELETE /_fake/faults`` disarms everything; ``DELETE /_fake/faults/{fault_id}`` one fault;
* ``POST /_fake/faults/now`` applies an out-of-band action at once, e.g.
  ``{"action": {"type": "set_status", "status": "failed"}, "sandbox_id": "sb-…"}`` or
  ``{"action": {"type": "vanish_network", "network_id": "net_…"}, "account": "acc_…"}``.

Bad input answers a 400 ``fail`` envelope naming the field; an unknown target 404; a target of
another ``account`` or in the wrong state 409 with its code. Nothing here raises a 500.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.faults import (
    FaultSpecError,
    OutOfBandAction,
    TargetConflictError,
    TargetError,
    UnknownTargetError,
    action_from_json,
    action_to_json,
    fault_from_json,
)
from fake_server.http.errors import error_response, ok
from fake_server.http.keys import STATE_KEY
from fake_server.http.routes import CONTROL_PREFIX
from fake_server.http.wire.common import decode_json, read_body
from fake_server.http.wire.faults import fault_to_json, firing_to_json
from fake_server.models import BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    from fake_server.faults import Faults

__all__ = [
    "fault_routes",
]

_MAX_BODY = 256 * 1024
_MAX_SPECS = 1000


def _faults(request: web.Request) -> Faults:
    return request.app[STATE_KEY].faults


async def list_faults(request: web.Request) -> web.StreamResponse:
    faults = _faults(request)
    return ok(
        {
            "faults": [fault_to_json(faults, fault) for fault in faults.faults],
            "fired": [firing_to_json(firing) for firing in faults.fired],
            "unfired": [faults.fault_id(fault) for fault in faults.unfired()],
        }
    )


async def add_faults(request: web.Request) -> web.StreamResponse:
    faults = _faults(request)
    body = await _json_body(request)
    if isinstance(body, web.StreamResponse):
        return body
    specs = body if isinstance(body, list) else [body]
    if len(specs) > _MAX_SPECS:
        return _fail("body", f"at most {_MAX_SPECS} faults per request")
    try:
        built = [fault_from_json(spec) for spec in specs]
    except FaultSpecError as exc:
        return _fail(exc.field, exc.message)
    for fault in built:
        faults.add(fault)
    armed = [fault_to_json(faults, fault) for fault in built]
    return ok({"faults": armed} if isinstance(body, list) else armed[0], status=201)


async def clear_faults(request: web.Request) -> web.StreamResponse:
    faults = _faults(request)
    count = len(faults.faults)
    faults.clear()
    return ok({"cleared": count})


async def remove_fault(request: web.Request) -> web.StreamResponse:
    faults = _faults(request)
    wanted = request.match_info["fault_id"]
    for fault in faults.faults:
        if str(faults.fault_id(fault)) == wanted:
            faults.remove(fault)
            return ok({"removed": int(wanted)})
    return error_response(NotFound("no armed fault has this id", code="fault_not_found"))


async def apply_now(request: web.Request) -> web.StreamResponse:
    body = await _json_body(request)
    if isinstance(body, web.StreamResponse):
        return body
    if not isinstance(body, dict):
        return _fail("body", "must be a JSON object")
    try:
        action = action_from_json(body.get("action"))
    except FaultSpecError as exc:
        return _fail(exc.field, exc.message)
    if not isinstance(action, OutOfBandAction):
        return _fail("action.type", "must be an out-of-band action")
    return _apply_now(_faults(request), action, body)


def fault_routes() -> list[web.RouteDef]:
    """The ``/_fake/faults`` route definitions (``http.control.api`` serves them with the rest)."""
    p = CONTROL_PREFIX
    return [
        web.get(f"{p}/faults", list_faults, name="fake_list_faults"),
        web.post(f"{p}/faults", add_faults, name="fake_add_faults"),
        web.delete(f"{p}/faults", clear_faults, name="fake_clear_faults"),
        web.post(f"{p}/faults/now", apply_now, name="fake_apply_fault_now"),
        web.delete(f"{p}/faults/{{fault_id}}", remove_fault, name="fake_remove_fault"),
    ]


def _apply_now(faults: Faults, action: OutOfBandAction, body: dict[str, Any]) -> web.Response:
    ids: dict[str, str | None] = {}
    for name in ("sandbox_id", "process_id", "account"):
        value = body.get(name)
        if value is not None and (not isinstance(value, str) or not value):
            return _fail(name, "must be a non-empty string")
        ids[name] = value
    for name in action.needs:
        if getattr(action, name, None) or ids.get(name):
            continue
        if name == "sandbox_id":
            return _fail("sandbox_id", "required string")
        if name == "process_id":
            return _fail("process_id", "required string for this action")
        return _fail(f"action.{name}", "required string for this action")
    try:
        faults.apply_now(action, ids["sandbox_id"], ids["process_id"], account=ids["account"])
    except UnknownTargetError as exc:
        return error_response(NotFound(str(exc), code="not_found"))
    except TargetConflictError as exc:
        return error_response(Conflict(exc.message, code=exc.code))
    except TargetError as exc:
        return _fail(f"action.{exc.field}", exc.message)
    return ok({"applied": action_to_json(action)})


async def _json_body(request: web.Request) -> object:
    try:
        raw = await read_body(request, _MAX_BODY, too_large=f"must be at most {_MAX_BODY} bytes")
        return decode_json(raw, invalid="must be valid JSON")
    except BadRequest as exc:
        return error_response(exc)


def _fail(field: str, message: str) -> web.Response:
    return error_response(BadRequest(message, field=field))
