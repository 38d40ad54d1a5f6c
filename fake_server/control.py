"""The fake's own control API under ``/_fake/``, for out-of-process and non-Python users.

Routes (all need the ``X-Api-Key`` of any account; answers use the same JSend envelopes):

* ``POST /_fake/reset``: drop sandboxes, extra accounts, journal and errors; reseed.
* ``GET /_fake/state``: accounts (ids, never keys) with their sandboxes and processes.
* ``GET /_fake/journal``: every journaled event.
* ``POST /_fake/clock/advance`` ``{"seconds": n}``: move a virtual clock forward.
* ``PUT /_fake/transitions``: replace the transition policy (see ``parse_policy``).

More routes (fault injection) register through ``fake.control_registrars``: callables that
receive the app's router and add routes named ``fake_*``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.http import wire
from fake_server.http.keys import FAKE_KEY
from fake_server.models import BadRequest, Conflict, Step, TransitionPolicy

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from fake_server.server import FakeCreateOS

    ControlRegistrar = Callable[[web.UrlDispatcher], None]

__all__ = ["parse_policy", "register_control_routes"]


def _ok(data: Mapping[str, Any]) -> web.Response:
    return web.json_response(wire.success(data))


async def reset(request: web.Request) -> web.Response:
    request.app[FAKE_KEY].reset()
    return _ok({"reset": True})


async def state(request: web.Request) -> web.Response:
    fake = request.app[FAKE_KEY]
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
        accounts.append({"user_id": account.id, "sandboxes": sandboxes})
    return _ok({"accounts": accounts, "clock": fake.clock.now(), "errors": len(fake.errors)})


async def journal(request: web.Request) -> web.Response:
    events = [dataclasses.asdict(e) for e in request.app[FAKE_KEY].journal.events]
    return _ok({"events": events})


async def advance_clock(request: web.Request) -> web.Response:
    fake = request.app[FAKE_KEY]
    body = await wire.read_json(request)
    seconds = body.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise BadRequest("must be a number", field="seconds")
    if not math.isfinite(seconds) or not 0 <= seconds <= 10**9:
        raise BadRequest("must be between 0 and 1e9", field="seconds")
    advance = getattr(fake.clock, "advance", None)
    if advance is None:
        raise Conflict("the fake runs on a real clock", code="real_clock")
    advance(float(seconds))
    return _ok({"now": fake.clock.now()})


async def put_transitions(request: web.Request) -> web.Response:
    fake = request.app[FAKE_KEY]
    policy = parse_policy(await wire.read_json(request), fake.world.ctx.policy)
    fake.world.ctx.policy = policy
    return _ok(policy.to_dict())


def _number(value: object, field: str, *, integer: bool = False) -> float:
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or (integer and not isinstance(value, int)):
        raise BadRequest("must be a number" if not integer else "must be an integer", field=field)
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or not 0 <= number <= 10**9:
        raise BadRequest("must be between 0 and 1e9", field=field)
    return number


def parse_policy(body: Mapping[str, Any], current: TransitionPolicy) -> TransitionPolicy:
    """``{"preset": "realistic"|"immediate", "after_reads": n, "after": s,
    "creating"|"pausing"|"resuming"|"destroying": {"seconds": s, "reads": n},
    "destroyed_visible_for": s}``; unspecified parts keep their current value."""
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
    for name in ("creating", "pausing", "resuming", "destroying"):
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


def core_control_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/_fake/reset", reset, name="fake_reset")
    router.add_get("/_fake/state", state, name="fake_state")
    router.add_get("/_fake/journal", journal, name="fake_journal")
    router.add_post("/_fake/clock/advance", advance_clock, name="fake_clock_advance")
    router.add_put("/_fake/transitions", put_transitions, name="fake_transitions")


def register_control_routes(app: web.Application, fake: FakeCreateOS) -> None:
    for registrar in (core_control_routes, *fake.control_registrars):
        registrar(app.router)
