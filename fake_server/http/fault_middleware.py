"""The fault middleware: asks the app's fault engine what to do with each API request and
does it; ``journal_listener`` records each firing in the fake's journal.

Installed after auth (so the account is known) and before the handler, inside the core
middleware (so an injected ``HttpError`` gets the real envelope and the journal records it).
Transport faults close the connection and hand aiohttp a response it can no longer send, which
aiohttp treats as a client disconnect: nothing is logged, ``fake.errors`` stays empty.

What httpx sees (and the provider reports as "CreateOS connection failed."):

* ``ResetBeforeResponse`` -> ``httpx.ReadError`` (TCP RST, no byte of the reply);
* ``EmptyReply`` -> ``httpx.RemoteProtocolError`` (FIN, no byte of the reply);
* ``ResetAfterHeaders``, a cut stream or a truncated download -> status and headers arrive,
  then reading the body raises ``httpx.RemoteProtocolError`` or ``httpx.ReadError``;
* ``LostReply`` -> like ``EmptyReply`` for JSON operations, but the operation was committed;
  on a stream operation the body is cut right after the headers.
"""

from __future__ import annotations

import dataclasses
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.faults import (
    Call,
    EmptyReply,
    HttpError,
    LostReply,
    ResetAfterHeaders,
    ResetBeforeResponse,
    StreamAction,
)
from fake_server.http.errors import error_response
from fake_server.http.keys import (
    ACCOUNT_KEY,
    CALL_KEY,
    OPERATION_KEY,
    STATE_KEY,
    STREAM_WRAPPERS_KEY,
)
from fake_server.http.middlewares import event_of
from fake_server.http.routes import is_control
from fake_server.http.streams.faults import StreamCut, drop_connection, wrap_writer
from fake_server.models import ApiError
from fake_server.models.journal.events import Event

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp.typedefs import Handler

    from fake_server.clock import Clock
    from fake_server.faults import Aim, FaultFiring, OutOfBandAction
    from fake_server.models import Journal


__all__ = ["DROPPED_STATUS", "applied_listener", "fault_middleware", "journal_listener"]

#: Status journaled for a request whose connection a fault dropped before any reply.
DROPPED_STATUS = 499


@web.middleware
async def fault_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Consults the app's faults for every API request (the control API is never faulted)."""
    faults = request.app[STATE_KEY].faults
    if faults.idle or is_control(request):  # idle: no call to describe, no plan to make
        return await handler(request)
    plan = faults.plan(_call(request))
    if plan.empty:
        return await handler(request)
    clock = request.app[STATE_KEY].world.ctx.clock
    if plan.latency > 0:
        await clock.sleep(plan.latency)
    faults.apply_out_of_band(plan)
    action = plan.response
    if action is None:
        return await handler(request)
    if isinstance(action, HttpError):
        raise _error(action)
    if isinstance(action, ResetBeforeResponse | EmptyReply):
        drop_connection(request, reset=isinstance(action, ResetBeforeResponse))
        return web.Response(status=DROPPED_STATUS)
    if isinstance(action, ResetAfterHeaders):
        return await _reset_after_headers(request, handler, action)
    if isinstance(action, LostReply):
        return await _lost_reply(request, handler)
    if isinstance(action, StreamAction):
        return await _faulty_stream(request, handler, action, clock, plan.pending)
    return await handler(request)  # pragma: no cover - every response action is handled


def journal_listener(journal: Journal) -> Callable[[FaultFiring], None]:
    """Records each firing in the fake's journal (``kind="fault"``), stamped with its time."""

    def record(firing: FaultFiring) -> None:
        detail = f"fault#{firing.fault_id} {firing.fault.action!r}"
        journal.record(event_of(firing.call, kind="fault", time=firing.at, detail=detail))

    return record


def applied_listener(journal: Journal, clock: Clock) -> Callable[[OutOfBandAction, Aim], None]:
    """Records each out-of-band change applied now (``fake.faults.*`` or ``/_fake/faults/now``)
    in the journal as a ``fault`` event without a request."""

    def record(action: OutOfBandAction, aim: Aim) -> None:
        journal.record(
            Event(
                time=clock.now(),
                kind="fault",
                account_id=aim.account,
                **aim.ids(),
                detail=f"applied now {action!r}",
            )
        )

    return record


def _call(request: web.Request) -> Call:
    return dataclasses.replace(request[CALL_KEY], account=request.get(ACCOUNT_KEY))


def _error(action: HttpError) -> ApiError:
    known = action.status in HTTPStatus._value2member_map_
    phrase = HTTPStatus(action.status).phrase.lower() if known else "injected error"
    message = action.message or phrase
    headers = {} if action.retry_after is None else {"Retry-After": str(action.retry_after)}
    return ApiError(message, code=action.code, headers=headers, status=action.status)


async def _reset_after_headers(
    request: web.Request, handler: Handler, action: ResetAfterHeaders
) -> web.StreamResponse:
    """Headers go out, the body never does; see ``ResetAfterHeaders`` for which status."""
    if action.status is not None:
        response = web.StreamResponse(
            status=action.status, headers={"Content-Type": "application/json"}
        )
        response.content_length = 64
        await response.prepare(request)
        drop_connection(request, reset=False)
        return response

    def at_first_write(writer: Any) -> Any:  # a streamed body: its headers are already out
        raise StreamCut("reset after the headers by an injected fault")

    committed = await _run(request, handler, at_first_write)
    if not committed.prepared:
        response = web.StreamResponse(status=committed.status, headers=committed.headers)
        response.content_length = max(1, committed.content_length or 0)
        await response.prepare(request)
        committed = response
    drop_connection(request, reset=False)
    return committed


async def _lost_reply(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Commit the operation, then drop the reply.

    A streamed exec still runs the command to the end (its output goes nowhere) before the
    connection drops; a process connection or a download drops right after the headers.
    """
    committing = request[OPERATION_KEY] == "exec_stream"

    def lose(writer: Any) -> Any:
        if committing:
            return _Swallow(writer.response)
        raise StreamCut("reply lost by an injected fault")

    response = await _run(request, handler, lose)
    drop_connection(request, reset=False)
    return response


class _Swallow:
    """A writer that sends nothing: the handler runs to completion, the client gets no body."""

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response

    async def write_frame(self, frame: object) -> None:
        return None

    async def write_line(self, line: bytes) -> None:
        return None

    async def write(self, data: bytes) -> None:
        return None


async def _faulty_stream(
    request: web.Request,
    handler: Handler,
    action: StreamAction,
    clock: Clock,
    pending: FaultFiring | None,
) -> web.StreamResponse:
    """Run the handler through a faulty writer; the fault has fired only if it acted."""
    cut: list[bool] = []
    writers: list[Any] = []

    def wrap(writer: Any) -> Any:
        faulty = wrap_writer(writer, action, request, clock, lambda: cut.append(True))
        writers.append(faulty)
        return faulty

    try:
        response = await _run(request, handler, wrap)
    finally:
        if pending is not None:
            acted = any(writer.acted for writer in writers)
            request.app[STATE_KEY].faults.settle(pending, acted=acted)
    if cut:
        drop_connection(request, reset=False)
    return response


async def _run(
    request: web.Request, handler: Handler, wrapper: Callable[[Any], Any]
) -> web.StreamResponse:
    """Run the handler with ``wrapper`` around its stream writer; a cut or failure still
    yields the response to hand back (the connection is dropped by the caller, afterwards).

    After a cut that is the response the handler had already started (its headers are out),
    so nothing else may be written on that connection.
    """
    started: list[web.StreamResponse] = []

    def remember(writer: Any) -> Any:
        response = getattr(writer, "response", None)
        if isinstance(response, web.StreamResponse):
            started.append(response)
        return wrapper(writer)

    request[STREAM_WRAPPERS_KEY].append(remember)
    try:
        return await handler(request)
    except StreamCut:
        return started[0] if started else web.Response(status=DROPPED_STATUS)
    except ApiError as error:  # the operation failed; the caller decides what the client sees
        return error_response(error)
