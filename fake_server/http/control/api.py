"""The fake's own control API under ``/_fake/``, for out-of-process and non-Python users.

Routes (all need the fake's control key in ``X-Fake-Control-Key``; answers use the same JSend
envelopes):

* ``POST /_fake/reset``: drop sandboxes, extra accounts, journal and errors; reseed.
* ``GET /_fake/state``: accounts (ids, never keys) with their sandboxes and processes.
* ``GET /_fake/journal``: every journaled event.
* ``POST /_fake/clock/advance`` ``{"seconds": n}``: move a virtual clock forward.
* ``PUT /_fake/transitions``: replace the transition policy (see ``parse_policy``).
* ``PUT /_fake/credit`` ``{"credit": n | null, "account"?: "usr-…"}``: an account's credit
  (the default account's unless ``account``); ``null`` is unlimited, ``0`` answers 402 to
  every cost-incurring call.

The fault routes (``/_fake/faults...``) live in ``http.control.faults``, a sandbox's pause,
resume, fork and destroy and emptying the journal in ``http.control.sandboxes``;
``control_routes()`` lists them all.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.http.control.faults import fault_routes
from fake_server.http.control.sandboxes import sandbox_control_routes
from fake_server.http.errors import ok
from fake_server.http.keys import STATE_KEY, WORLD_KEY
from fake_server.http.routes import CONTROL_PREFIX
from fake_server.http.wire.common import read_json
from fake_server.models import BadRequest, Conflict, NotFound, Step, TransitionPolicy
from fake_server.models.account.credit import check_balance
from fake_server.models.transitions import TRANSITIONAL

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["control_routes", "parse_policy"]


async def reset(request: web.Request) -> web.Response:
    request.app[STATE_KEY].reset()
    return ok({"reset": True})


async def state(request: web.Request) -> web.Response:
    fake = request.app[STATE_KEY]
    clock = fake.world.ctx.clock
    accounts = []
    for account in fake.world.accounts.values():
        account.whoami()  # settles transitions so the dump is current
        sandboxes = [
            {
                "id": s.id,
                "status": s.status,
                "processes": [
                    {"process_id": p.process_id, "state": p.state, "exit_code": p.exit_code}
                    for p in s.processes.values()
                ],
            }
            for s in account.sandboxes.values()
        ]
        accounts.append(
            {"user_id": account.id, "credit": account.credit.balance, "sandboxes": sandboxes}
        )
    return ok({"accounts": accounts, "clock": clock.now(), "errors": len(fake.errors)})


async def journal(request: web.Request) -> web.Response:
    events = [dataclasses.asdict(e) for e in request.app[WORLD_KEY].ctx.journal.events]
    return ok({"events": events})


async def advance_clock(request: web.Request) -> web.Response:
    clock = request.app[WORLD_KEY].ctx.clock
    body = await read_json(request)
    seconds = body.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise BadRequest("must be a number", field="seconds")
    if not math.isfinite(seconds) or not 0 <= seconds <= 10**9:
        raise BadRequest("must be between 0 and 1e9", field="seconds")
    advance = getattr(clock, "advance", None)
    if advance is None:
        raise Conflict("the fake runs on a real clock", code="real_clock")
    advance(float(seconds))
    return ok({"now": clock.now()})


async def put_transitions(request: web.Request) -> web.Response:
    ctx = request.app[WORLD_KEY].ctx
    policy = parse_policy(await read_json(request), ctx.policy)
    ctx.policy = policy
    return ok(policy.to_dict())


def _number(value: object, field: str, *, integer: bool = False) -> float:
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or (integer and not isinstance(value, int)):
        raise BadRequest("must be a number" if not integer else "must be an integer", field=field)
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or not 0 <= number <= 10**9:
        raise BadRequest("must be between 0 and 1e9", field=field)
    return number


_POLICY_FIELDS = frozenset(
    {"preset", "after_reads", "after", "destroyed_visible_for", *TRANSITIONAL}
)


def parse_policy(body: Mapping[str, Any], current: TransitionPolicy) -> TransitionPolicy:
    """``{"preset": "realistic"|"immediate", "after_reads": n, "after": s,
    "creating"|"pausing"|"resuming"|"destroying": {"seconds": s, "reads": n},
    "destroyed_visible_for": s}``; unspecified parts keep their current value."""
    for key in body:
        if key not in _POLICY_FIELDS:
            raise BadRequest("unknown field", field=str(key)[:64])
    policy = current
    preset = body.get("preset")
    if preset is not None:
        if preset not in ("realistic", "immediate"):
            raise BadRequest("must be realistic or immediate", field="preset")
        policy = (
            TransitionPolicy.realistic() if preset == "realistic" else TransitionPolicy.immediate()
        )
    if "after_reads" in body:
        reads = int(_number(body["after_reads"], "after_reads", integer=True))
        policy = dataclasses.replace(
            TransitionPolicy.after_reads(reads), destroyed_visible_for=policy.destroyed_visible_for
        )
    if "after" in body:
        seconds = _number(body["after"], "after")
        policy = dataclasses.replace(
            TransitionPolicy.after(seconds), destroyed_visible_for=policy.destroyed_visible_for
        )
    steps: dict[str, Step] = {}
    for name in TRANSITIONAL:
        raw = body.get(name)
        if raw is None:
            continue
        if not isinstance(raw, dict):
            raise BadRequest("must be an object with seconds and reads", field=name)
        seconds = _number(raw.get("seconds", 0), name)
        reads = int(_number(raw.get("reads", 0), name, integer=True))
        steps[name] = Step(seconds=seconds, reads=reads)
    policy = policy.override(**steps)
    if "destroyed_visible_for" in body:
        visible = _number(body["destroyed_visible_for"], "destroyed_visible_for")
        policy = dataclasses.replace(policy, destroyed_visible_for=visible)
    return policy


async def put_credit(request: web.Request) -> web.Response:
    fake = request.app[STATE_KEY]
    body = await read_json(request)
    if "credit" not in body:
        raise BadRequest("is required (null for unlimited)", field="credit")
    try:
        balance = check_balance(body["credit"])
    except ValueError:
        raise BadRequest("must be null (unlimited) or a number >= 0", field="credit") from None
    wanted = body.get("account")
    if wanted is None:
        account = fake.world.account_for_key(fake.default_key())
    elif isinstance(wanted, str):
        account = next((a for a in fake.world.accounts.values() if a.id == wanted), None)
    else:
        raise BadRequest("must be an account id (user_id)", field="account")
    if account is None:
        raise NotFound("no account has this id", code="account_not_found")
    account.credit.set(balance)
    return ok({"user_id": account.id, "credit": balance})


def control_routes() -> list[web.RouteDef]:
    """Every ``/_fake/...`` route; the route name (``fake_*``) is the journal's operation."""
    p = CONTROL_PREFIX
    return [
        web.post(f"{p}/reset", reset, name="fake_reset"),
        web.get(f"{p}/state", state, name="fake_state"),
        web.get(f"{p}/journal", journal, name="fake_journal"),
        web.post(f"{p}/clock/advance", advance_clock, name="fake_clock_advance"),
        web.put(f"{p}/transitions", put_transitions, name="fake_transitions"),
        web.put(f"{p}/credit", put_credit, name="fake_credit"),
        *fault_routes(),
        *sandbox_control_routes(),
    ]
