"""Middlewares: the core one (operation name, journal, clock, envelopes, 500 capture) and auth.

Order, outermost first: see ``http.app.create_app``.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import hmac
import json
import traceback
import weakref
from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.clock import EXCHANGE_HEADER
from fake_server.clock.unreported import UNREPORTED, unreported_provider
from fake_server.faults import Call
from fake_server.http.connections import request_finished, request_started
from fake_server.http.errors import error_response
from fake_server.http.handlers.commands import MAX_UPLOAD_BYTES
from fake_server.http.keys import (
    ACCOUNT_KEY,
    ANNOUNCED_KEY,
    BACKEND_KEY,
    CALL_KEY,
    ERRORS_KEY,
    OPERATION_KEY,
    REQUEST_ID_KEY,
    STATE_KEY,
    STREAM_WRAPPERS_KEY,
    WORLD_KEY,
)
from fake_server.http.recorder import read_ahead, request_message, response_message, secrets_of
from fake_server.http.routes import CONTROL_KEY_HEADER, CONTROL_PREFIX, KEY_HEADERS, is_control
from fake_server.http.shared_routes import SharedRoutes
from fake_server.http.wire.common import MAX_JSON_BYTES
from fake_server.models import (
    ApiError,
    BadRequest,
    Event,
    Forbidden,
    InternalError,
    MethodNotAllowed,
    NotImplementedByFake,
    PayloadTooLarge,
    RateLimited,
    Unauthorized,
)
from fake_server.operations import BY_NAME, exec_streamed

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from aiohttp.typedefs import Handler
    from aiohttp.web_urldispatcher import AbstractResource

    from fake_server.clock import Clock
    from fake_server.models import Account, Journal


__all__ = [
    "UNAUTHORIZED_MESSAGE",
    "auth_middleware",
    "core_middleware",
    "not_implemented",
    "operation_of",
    "rate_limit_middleware",
    "reply_head",
]

_MAX_QUERY = 20
#: Names the accepted headers: ``Authorization: Bearer`` is a common first guess the API refuses.
UNAUTHORIZED_MESSAGE = (
    f"missing or invalid API key; send it in the {KEY_HEADERS[0]} header "
    f"({' and '.join(KEY_HEADERS[1:])} work too; Authorization: Bearer does not)"
)


def operation_of(request: web.Request) -> str:
    """The stable operation name: the route's name (``exec`` until its body says whether it
    streams: ``_streamed``)."""
    match = request.match_info
    if isinstance(match.http_exception, web.HTTPMethodNotAllowed):
        return "method_not_allowed"
    if match.http_exception is not None:
        return "not_implemented"
    return (match.route.name or "not_implemented").split(":")[0]


def _streamed(request: web.Request, body: bytes | None) -> bool:
    """Whether an ``exec`` streams (``operations.exec_streamed``: the query or the body's
    ``stream``), so it is ``exec_stream``. Only a body that names ``stream`` is parsed; one that
    is not JSON does not stream (its handler answers the 400)."""
    flag: object = None
    if body and b'"stream"' in body:
        with contextlib.suppress(ValueError, RecursionError):
            parsed = json.loads(body)
            flag = parsed.get("stream") if isinstance(parsed, dict) else None
    return exec_streamed(request.query.get("stream"), flag)


def _known_routes(request: web.Request) -> list[str]:
    routes = set()
    for resource in _resources(request.app.router.resources()):
        info = resource.get_info()
        path = info.get("path") or info.get("formatter")
        if isinstance(path, str):
            routes.add(path)
    return sorted(routes)


def _resources(resources: Iterable[AbstractResource]) -> Iterator[AbstractResource]:
    """``resources`` with each shared table's own in its place (``http.shared_routes``)."""
    for resource in resources:
        if isinstance(resource, SharedRoutes):
            yield from resource.resources()
        else:
            yield resource


async def not_implemented(request: web.Request) -> web.StreamResponse:
    """Handler of real routes the fake does not serve (see ``routes.UNIMPLEMENTED``)."""
    raise _unmatched(request)


def _unmatched(request: web.Request) -> ApiError:
    exc = request.match_info.http_exception
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        return MethodNotAllowed(
            f"method not allowed; allowed: {allowed}", headers={"Allow": allowed}
        )
    known = _known_routes(request)
    if not is_control(request):
        known = [route for route in known if not route.startswith(CONTROL_PREFIX + "/")]
    nearest = difflib.get_close_matches(request.path[:300], known, n=3, cutoff=0.0)
    return NotImplementedByFake(
        "this route is not implemented by the CreateOS fake; nearest known routes: "
        + ", ".join(nearest)
    )


def _from_http(exc: web.HTTPException) -> ApiError:
    if exc.status == 413:
        return PayloadTooLarge("request body is too large", field="body")
    if exc.status == 405:
        return MethodNotAllowed("method not allowed")
    if exc.status < 500:
        return BadRequest("request could not be processed", code="bad_request")
    return InternalError("internal error in the fake")


@web.middleware
async def core_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Names the operation, journals request and response, renders every error."""
    world = request.app[WORLD_KEY]
    clock = world.ctx.clock
    exchange = request.headers.get(EXCHANGE_HEADER)
    request[ANNOUNCED_KEY] = exchange if clock.request_arrived(exchange) else None
    if unreported_provider(clock, request.headers.get("User-Agent"), exchange):
        _note_unreported(world.ctx.journal, clock)
    try:
        return await _serve(request, handler, clock)
    finally:
        request_finished(request)


#: The journal generation each journal last got the unreported-provider notice in.
_NOTED: weakref.WeakKeyDictionary[Journal, int] = weakref.WeakKeyDictionary()


def _note_unreported(journal: Journal, clock: Clock) -> None:
    """The fake's notice, once per test (journal generation), that a provider on its virtual
    clock reports nothing to it (``clock.unreported``)."""
    if _NOTED.get(journal) != journal.generation:
        _NOTED[journal] = journal.generation
        journal.record(Event(time=clock.now(), kind="notice", detail=UNREPORTED))


async def _serve(request: web.Request, handler: Handler, clock: Clock) -> web.StreamResponse:
    state = request.app[STATE_KEY]
    journal = state.world.ctx.journal
    operation = operation_of(request)
    request[OPERATION_KEY] = operation
    request[STREAM_WRAPPERS_KEY] = []
    match = request.match_info
    request_id = request[REQUEST_ID_KEY] = state.world.next_request_id()
    messages = journal.messages
    secrets = secrets_of(state)
    response: web.StreamResponse
    with clock.busy():
        request_started(request)  # no longer partly received: this busy token takes over
        body: bytes | None = None
        try:
            # Read once, here: fault rules match on it and the journal keeps it.
            body = await read_ahead(request, _body_limit(operation), digest=messages)
            if operation == "exec" and _streamed(request, body):
                operation = request[OPERATION_KEY] = "exec_stream"
        finally:
            call = request[CALL_KEY] = _call_of(request, operation, request_id, body)
            query, headers, text = await request_message(request, call, secrets, messages=messages)
            journal.record(
                event_of(
                    call, kind="request", time=clock.now(), query=query, headers=headers, body=text
                )
            )
        try:
            # Unmatched routes run the chain too (their handler raises the router's 404/405),
            # so fault injection sees ``not_implemented`` requests like any other.
            response = await handler(request)
        except ApiError as error:
            response = error_response(error)
        except web.HTTPException as exc:
            unmatched = match.http_exception is not None and exc is match.http_exception
            response = error_response(_unmatched(request) if unmatched else _from_http(exc))
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception:
            request.app[ERRORS_KEY].append((operation, traceback.format_exc()))
            response = error_response(InternalError("internal error in the fake"))
    account = request.get(ACCOUNT_KEY)
    headers, text = (
        response_message(request, response, secrets, state.reply_texts) if messages else ((), None)
    )
    journal.record(
        event_of(
            call,
            kind="response",
            time=clock.now(),
            status=response.status,
            account=account,
            headers=headers,
            body=text,
        )
    )
    return response


def _body_limit(operation: str) -> int:
    """The most read ahead for a handler of ``operation`` (its ``body``): a file for uploads,
    JSON for the rest, and nothing for a body streamed through to the sandbox (preview
    traffic), which is neither read ahead nor kept."""
    record = BY_NAME.get(operation)
    kind = record.body if record is not None else "json"
    if kind == "streamed":
        return -1
    return MAX_UPLOAD_BYTES if kind == "file" else MAX_JSON_BYTES


def _call_of(request: web.Request, operation: str, request_id: str, body: bytes | None) -> Call:
    """The one record of what a request is: journal events and fault matching read it."""
    match = request.match_info
    query = {k: v[:200] for k, v in list(request.query.items())[:_MAX_QUERY]}
    return Call(
        operation=operation,
        method=request.method,
        path=request.path[:300],
        query=query,
        sandbox_id=match.get("sandbox_id"),
        process_id=match.get("process_id"),
        network_id=match.get("network_id"),
        disk_id=match.get("disk_id"),
        template_id=match.get("template_id"),
        request_id=request_id,
        body=body,
    )


def event_of(
    call: Call,
    *,
    kind: str,
    time: float,
    status: int | None = None,
    account: str | None = None,
    detail: str = "",
    query: str = "",
    headers: tuple[tuple[str, str], ...] = (),
    body: str | None = None,
) -> Event:
    """A journal event about ``call`` (its account when given, else the call's); ``query``,
    ``headers`` and ``body`` as ``recorder`` keeps them."""
    return Event(
        time=time,
        kind=kind,
        operation=call.operation,
        method=call.method,
        path=call.path,
        status=status,
        account_id=account if account is not None else call.account,
        request_id=call.request_id,
        **call.known().ids(),
        query=query,
        headers=headers,
        body=body,
        detail=detail,
    )


async def reply_head(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: every reply, streamed ones included, names its request; the
    head of an announced exchange is on the wire from here until its client claims it, and so
    is a whole body written with it (a streamed body counts as each piece is written)."""
    announced = request.get(ANNOUNCED_KEY)
    if announced:
        clock = request.app[WORLD_KEY].ctx.clock
        clock.response_sent(announced)
        size = _body_size(response)
        if size:
            clock.response_sent(announced, size)
    request_id = request.get(REQUEST_ID_KEY)
    if request_id is not None:
        response.headers["X-Request-Id"] = request_id


def _body_size(response: web.StreamResponse) -> int:
    """Bytes of the body a ``web.Response`` sends with its head; 0 for a streamed reply, a
    reply that sends none (to HEAD, 204, 304: the client then claims none, and closing the
    exchange drops the count) and a payload of unknown size."""
    if not isinstance(response, web.Response):
        return 0
    body = response.body
    if isinstance(body, (bytes, bytearray)):
        return len(body)
    size = getattr(body, "size", None)
    return size if isinstance(size, int) else 0


def _token_account(request: web.Request, owner: tuple[Account, str] | None) -> Account | None:
    """A sandbox access token acts as its account on its own sandbox only."""
    if owner is None:
        return None
    account, sandbox_id = owner
    record = BY_NAME.get(request[OPERATION_KEY])
    if request.match_info.get("sandbox_id") != sandbox_id or (record and record.token_denied):
        raise Forbidden("this access token is scoped to one sandbox", code="token_scope")
    return account


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Each API key is an account; the control API takes only the fake's control key."""
    record = BY_NAME.get(request[OPERATION_KEY])
    if record is not None and record.open:
        return await handler(request)
    if is_control(request):
        _check_control_key(request)
        return await handler(request)
    key = _account_key(request)
    world = request.app[WORLD_KEY]
    account = world.account_for_key(key) if key else None
    if account is None and key:
        account = _token_account(request, world.token_owner(key))
    if account is None:
        raise Unauthorized(UNAUTHORIZED_MESSAGE, code="unauthorized")
    request[ACCOUNT_KEY] = account.id
    request[BACKEND_KEY] = account
    return await handler(request)


def _account_key(request: web.Request) -> str | None:
    key = next((request.headers[h] for h in KEY_HEADERS if request.headers.get(h)), None)
    return key.strip() if key else None


def _check_control_key(request: web.Request) -> None:
    given = request.headers.get(CONTROL_KEY_HEADER, "").strip()
    expected = request.app[STATE_KEY].control_key
    if given and hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode()):
        return
    if not given and _account_key(request):
        raise Forbidden(
            f"account API keys do not open the control API; send the fake's control key "
            f"in {CONTROL_KEY_HEADER}",
            code="control_key_required",
        )
    raise Unauthorized(
        f"missing or invalid control key ({CONTROL_KEY_HEADER})", code="unauthorized"
    )


def caller_of(request: web.Request) -> str:
    """Who a request counts against: its authenticated account, else (an open route) its peer.

    Runs after authentication, so every way of sending a key counts against the same account
    and a request with a bogus key (a 401) never gets an entry.
    """
    account = request.get(ACCOUNT_KEY)
    if account is not None:
        return f"account:{account}"
    return f"peer:{request.remote or '?'}"


@web.middleware
async def rate_limit_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Raises the fake's ``RateLimited`` error (429 + ``Retry-After``) past the app's limit;
    the control API is never limited."""
    if not is_control(request):
        retry_after = request.app[STATE_KEY].limiter.acquire(caller_of(request))
        if retry_after is not None:
            raise RateLimited(retry_after)
    return await handler(request)
