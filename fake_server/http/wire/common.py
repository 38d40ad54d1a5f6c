"""What every route's wire shares: the success envelope, timestamps, reading a body as
JSON within its limit, and the typed field parsers that answer 400 naming the field.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fake_server.http.bodies import read_some
from fake_server.http.recorder import BODY_KEY
from fake_server.models import ApiError, BadRequest
from fake_server.runtime.argv import oversize

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

__all__ = [
    "MAX_JSON_BYTES",
    "bool_field",
    "command_fits",
    "decode_json",
    "iso",
    "no_nul",
    "opt_int",
    "query_int",
    "read_body",
    "read_json",
    "str_field",
    "str_list",
    "str_map",
    "success",
]


MAX_JSON_BYTES = 8 * 1024 * 1024


_INT = re.compile(r"^[0-9]{1,15}$")


def success(data: Mapping[str, Any]) -> dict[str, Any]:
    return {"status": "success", "data": dict(data)}


def iso(timestamp: float | None) -> str | None:
    """``2026-01-01T00:00:00.000Z``; ``None`` stays ``None``."""
    if timestamp is None:
        return None
    return _iso(timestamp)


@functools.lru_cache(maxsize=1024)
def _iso(timestamp: float) -> str:
    """Formatted once per moment: a sandbox's times are sent with every reply about it."""
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def read_body(
    request: web.Request, limit: int, *, too_large: str, error: type[ApiError] = BadRequest
) -> bytes:
    """The whole body, refused (``error(too_large)``, field ``body``) past ``limit`` bytes.

    The core middleware has usually read it already (``recorder.read_ahead``); otherwise read
    until the end: one ``read(n)`` returns only what has arrived, which is part of a body sent
    in more than one TCP segment.
    """
    if request.content_length is not None and request.content_length > limit:
        raise error(too_large, field="body")
    ahead = request.get(BODY_KEY)
    if isinstance(ahead, Exception):
        raise ahead
    if isinstance(ahead, bytes):
        if len(ahead) > limit:
            raise error(too_large, field="body")
        return ahead
    raw = bytearray()
    while chunk := await read_some(request, limit + 1 - len(raw)):
        raw += chunk
        if len(raw) > limit:
            raise error(too_large, field="body")
    return bytes(raw)


def decode_json(raw: bytes, *, invalid: str = "is not valid JSON") -> object:
    """Any JSON value; lone surrogates (which ``json.loads`` lets through and nothing
    downstream can encode) are refused too."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest(invalid, field="body") from None
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except (UnicodeEncodeError, RecursionError, ValueError):
        raise BadRequest("must be valid UTF-8 JSON", field="body") from None
    return value


async def read_json(request: web.Request, *, optional: bool = False) -> dict[str, Any]:
    """The body as a JSON object; an empty body is ``{}`` when ``optional``."""
    raw = await read_body(request, MAX_JSON_BYTES, too_large="is too large")
    if not raw.strip():
        if optional:
            return {}
        raise BadRequest("must be a JSON object", field="body")
    body = decode_json(raw)
    if not isinstance(body, dict):
        raise BadRequest("must be a JSON object", field="body")
    return body


def query_int(request: web.Request, name: str, default: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not _INT.match(raw):
        raise BadRequest("must be a non-negative integer", field=name)
    return int(raw)


def str_field(body: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise BadRequest("is required", field=name)
        return None
    if not isinstance(value, str):
        raise BadRequest("must be a string", field=name)
    if required and not value:
        raise BadRequest("is required", field=name)
    return value


def str_list(body: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = body.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest("must be a list of strings", field=name)
    return tuple(value)


def str_map(body: Mapping[str, Any], name: str) -> tuple[tuple[str, str], ...]:
    value = body.get(name)
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise BadRequest("must be an object of string values", field=name)
    return tuple(value.items())


def bool_field(body: Mapping[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest("must be a boolean", field=name)
    return value


def opt_int(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        raise BadRequest("must be a non-negative integer", field=name)
    return value


def no_nul(*values: str | None) -> None:
    for value in values:
        if value is not None and "\x00" in value:
            raise BadRequest("must not contain NUL", field="cmd")


def command_fits(cmd: str, args: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> None:
    """400 naming the field when the command is larger than Linux passes to a program (an
    argument over 128 KiB, say), which would otherwise fail to start."""
    problem = oversize([cmd, *args], dict(env))
    if problem is not None:
        field, message = problem
        raise BadRequest(message, field=field)
