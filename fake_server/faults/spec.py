"""JSON fault specs for the ``/_fake/faults`` control API: parse with field-level errors, render.

A spec is ``{"operation": "resume_sandbox", "action": {"type": "http_error", "status": 503},
"times": 1}`` plus the optional schedule fields ``after``, ``probability`` (``"times": null``
means every call), the matchers ``sandbox_id``, ``process_id``, ``account``, ``query`` (an
object of query parameters that must all be equal) and ``name``/``expected``. Bad input raises
``FaultSpecError`` naming the field, which the control route turns into a 400 ``fail`` envelope.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from fake_server.faults.actions import Action, TamperFile
from fake_server.faults.catalog import ACTION_TYPES
from fake_server.faults.fault import DEFAULT, Call, Fault
from fake_server.faults.matchers import AllOf, BodyContains

__all__ = [
    "ACTION_TYPES",
    "FaultSpecError",
    "QueryEquals",
    "action_from_json",
    "action_to_json",
    "fault_from_json",
]

#: A spec's fields: the ``Fault``'s own, ``when`` given as ``query`` and ``body`` matchers.
_FAULT_FIELDS: Final = frozenset(Fault.settable()) - {"when"} | {"query", "body"}
#: The string fields naming what a fault narrows to.
_ID_FIELDS: Final = Fault.names()
#: The fields passed on as they are (``Fault`` checks them).
_PLAIN_FIELDS: Final = tuple(
    key
    for key in Fault.settable()
    if key not in ("operation", "action", "times", "when") and key not in _ID_FIELDS
)
_MAX_TEXT: Final = 200


class FaultSpecError(ValueError):
    """A field of a JSON fault spec is missing or wrong; ``field`` is its dotted name."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class QueryEquals:
    """Predicate: every listed query parameter has exactly the given value."""

    params: tuple[tuple[str, str], ...]

    def __call__(self, call: Call) -> bool:
        return all(call.query.get(key) == value for key, value in self.params)


def fault_from_json(spec: object) -> Fault:
    """Build a ``Fault`` from a decoded JSON object, or raise ``FaultSpecError``."""
    if not isinstance(spec, Mapping):
        raise FaultSpecError("fault", "must be a JSON object")
    for key in spec:
        if key not in _FAULT_FIELDS:
            raise FaultSpecError(str(key)[:_MAX_TEXT], "unknown field")
    operation = spec.get("operation")
    if not isinstance(operation, str):
        raise FaultSpecError("operation", "required string, an operation name or *")
    action = action_from_json(spec.get("action"))
    kwargs: dict[str, Any] = {}
    for key in _ID_FIELDS:
        value = spec.get(key)
        if value is not None:
            if not isinstance(value, str) or not value or len(value) > _MAX_TEXT:
                raise FaultSpecError(key, f"must be a non-empty string of at most {_MAX_TEXT}")
            kwargs[key] = value
    kwargs["times"] = spec.get("times", DEFAULT)
    for key in _PLAIN_FIELDS:
        if key in spec:
            kwargs[key] = spec[key]
    if "expected" in kwargs and not isinstance(kwargs["expected"], bool):
        raise FaultSpecError("expected", "must be a boolean")
    when = [
        predicate
        for predicate in (
            _query(spec["query"]) if "query" in spec else None,
            _body(spec["body"]) if "body" in spec else None,
        )
        if predicate is not None
    ]
    if when:
        kwargs["when"] = when[0] if len(when) == 1 else AllOf(tuple(when))
    try:
        return Fault(operation, action, **kwargs)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        field = "operation" if message.startswith("unknown operation") else _field_of(message)
        raise FaultSpecError("action" if field == "value" else field, message) from None


def action_to_json(action: Action) -> dict[str, object]:
    """The JSON form of an action (bytes as ``data_base64``), as the control API lists it."""
    out: dict[str, object] = {"type": action.kind}
    for item in dataclasses.fields(action):  # type: ignore[arg-type]
        value = getattr(action, item.name)
        if isinstance(value, bytes):
            out[f"{item.name}_base64"] = base64.b64encode(value).decode("ascii")
        else:
            out[item.name] = value
    return out


def action_from_json(spec: object) -> Action:
    """Build an action from its JSON form, or raise ``FaultSpecError``."""
    if not isinstance(spec, Mapping):
        raise FaultSpecError("action", 'required object with a "type"')
    kind = spec.get("type")
    cls = ACTION_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise FaultSpecError("action.type", "must be one of: " + ", ".join(sorted(ACTION_TYPES)))
    names = {item.name for item in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, object] = {}
    for key, value in spec.items():
        if key == "type":
            continue
        if cls is TamperFile and key in ("data", "data_base64"):
            kwargs["data"] = _data(key, value)
            continue
        if key not in names:
            raise FaultSpecError(f"action.{str(key)[:_MAX_TEXT]}", "unknown field")
        if isinstance(value, list | dict):
            raise FaultSpecError(f"action.{key}", "must be a scalar")
        kwargs[key] = value
    for item in dataclasses.fields(cls):  # type: ignore[arg-type]
        missing = (
            item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING
        )
        if missing and item.name not in kwargs:
            raise FaultSpecError(f"action.{item.name}", "required")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        field = _field_of(str(exc))
        raise FaultSpecError(
            "action" if field == "value" else f"action.{field}", str(exc)
        ) from None


def _data(key: str, value: object) -> bytes:
    if not isinstance(value, str):
        raise FaultSpecError(f"action.{key}", "must be a string")
    if key == "data":
        return value.encode("utf-8")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise FaultSpecError("action.data_base64", "must be valid base64") from None


def _query(value: object) -> QueryEquals:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise FaultSpecError("query", "must be an object of string values")
    return QueryEquals(tuple(sorted(value.items())))


def _body(value: object) -> BodyContains:
    if not isinstance(value, Mapping) or not value:
        raise FaultSpecError("body", "must be a non-empty object the request's JSON body contains")
    return BodyContains(dict(value))


def _field_of(message: str) -> str:
    """The field a constructor's ValueError talks about (its first word), for the envelope."""
    head = message.split(" ", 1)[0].strip("'\"")
    if head.isidentifier() and head.islower():
        return head
    return "value"
