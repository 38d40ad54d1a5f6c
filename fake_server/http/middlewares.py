"""Middlewares: the core one (operation name, journal, clock, envelopes, 500 capture) and auth.

Order, outermost first: core → rate limit (optional) → auth → extra (faults) → handler.
"""

from __future__ import annotations

import asyncio
import difflib
import traceback
from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.http.errors import error_response
from fake_server.http.keys import (
    ACCOUNT_KEY,
    ANNOUNCED_KEY,
    BACKEND_KEY,
    ERRORS_KEY,
    OPERATION_KEY,
    REQUEST_ID_KEY,
    STREAM_WRAPPERS_KEY,
    WORLD_KEY,
)
from fake_server.models import (
    ApiError,
    BadRequest,
    Event,
    Forbidden,
    InternalError,
    MethodNotAllowed,
    NotImplementedByFake,
    PayloadTooLarge,
    Unauthorized,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from fake_server.models import Account

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

__all__ = [
    "OPEN_OPERATIONS",
    "auth_middleware",
    "core_middleware",
    "not_implemented",
    "operation_of",
    "stamp_request_id",
]

#: Operations served without an API key (the SDK calls them with ``skip_auth``).
OPEN_OPERATIONS = frozenset(
    {
        "health",
        "readiness",
        "list_shapes",
        "list_rootfs",
        "not_implemented",
        "method_not_allowed",
        "ingress",  # preview URLs are public, as in the service
    }
)
#: What a sandbox access token may not do even on its own sandbox: manage credentials.
TOKEN_DENIED = frozenset(
    {"create_access_token", "rotate_access_token", "disable_access_token", "get_access_token"}
)
#: Headers the docs accept for the key; clients use ``X-Api-Key``.
KEY_HEADERS = ("X-Api-Key", "X-Auth-Token", "X-Access-Token")


def operation_of(request: web.Request) -> str:
    """The stable operation name: the route's name, refined for streaming exec."""
    match = request.match_info
    if isinstance(match.http_exception, web.HTTPMethodNotAllowed):
        return "method_not_allowed"
    if match.http_exception is not None:
        return "not_implemented"
    name = (match.route.name or "not_implemented").split(":")[0]
    if name == "exec" and request.query.get("stream", "").lower() in ("true", "1"):
        return "exec_stream"
    return name


def _known_routes(request: web.Request) -> list[str]:
    routes = set()
    for resource in request.app.router.resources():
        info = resource.get_info()
        path = info.get("path") or info.get("formatter")
        if isinstance(path, str):
            routes.add(path)
    return sorted(routes)


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
    if not request.path.startswith("/_fake/"):
        known = [route for route in known if not route.startswith("/_fake/")]
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
    journal = world.ctx.journal
    announced = request[ANNOUNCED_KEY] = clock.request_arrived()
    operation = operation_of(request)
    request[OPERATION_KEY] = operation
    request_id = request[REQUEST_ID_KEY] = world.next_request_id()
    request[STREAM_WRAPPERS_KEY] = []
    match = request.match_info
    sandbox_id = match.get("sandbox_id")
    process_id = match.get("process_id")
    path = request.path[:300]
    journal.record(
        Event(
            time=clock.now(),
            kind="request",
            operation=operation,
            method=request.method,
            path=path,
            sandbox_id=sandbox_id,
            process_id=process_id,
            request_id=request_id,
        )
    )
    response: web.StreamResponse
    with clock.busy():
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
    if announced and not response.prepared:
        clock.response_sent()
    journal.record(
        Event(
            time=clock.now(),
            kind="response",
            operation=operation,
            method=request.method,
            path=path,
            status=response.status,
            account_id=request.get(ACCOUNT_KEY),
            sandbox_id=sandbox_id,
            process_id=process_id,
            request_id=request_id,
        )
    )
    return response


async def stamp_request_id(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: every reply, streamed ones included, names its request."""
    request_id = request.get(REQUEST_ID_KEY)
    if request_id is not None:
        response.headers["X-Request-Id"] = request_id


def _token_account(request: web.Request, owner: tuple[Account, str] | None) -> Account | None:
    """A sandbox access token acts as its account on its own sandbox only."""
    if owner is None:
        return None
    account, sandbox_id = owner
    if request.match_info.get("sandbox_id") != sandbox_id or request[OPERATION_KEY] in TOKEN_DENIED:
        raise Forbidden("this access token is scoped to one sandbox", code="token_scope")
    return account


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Each API key is an account; control routes accept any account's key."""
    if request[OPERATION_KEY] in OPEN_OPERATIONS:
        return await handler(request)
    key = next((request.headers[h] for h in KEY_HEADERS if request.headers.get(h)), None)
    world = request.app[WORLD_KEY]
    account = world.account_for_key(key.strip()) if key else None
    if account is None and key:
        account = _token_account(request, world.token_owner(key.strip()))
    if account is None:
        raise Unauthorized("missing or invalid API key", code="unauthorized")
    request[ACCOUNT_KEY] = account.id
    request[BACKEND_KEY] = account
    return await handler(request)
