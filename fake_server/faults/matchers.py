"""``when=`` of a fault: a predicate on the ``Call``, or a JSON object its body must contain.

``when={"rootfs": "python"}`` matches a call whose body is a JSON object holding at least
these fields with these values (nested objects the same way, lists and scalars exactly);
a call without a JSON object body never matches. A callable receives the ``Call``, whose
``body``, ``text`` and ``json()`` give the request body.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from fake_server.models.journal.subset import contains

__all__ = ["AllOf", "BodyContains", "Predicate", "check_json", "predicate_of"]

#: A predicate on a ``faults.Call`` (typed loosely: ``fault`` imports this module).
Predicate = Callable[[Any], bool]


class _WithBody(Protocol):
    @property
    def body(self) -> bytes | None: ...


_MAX_DEPTH = 32


@dataclass(frozen=True)
class BodyContains:
    """Predicate: the request's JSON body contains ``expected`` (see the module docstring)."""

    expected: Mapping[str, Any]

    def __call__(self, call: _WithBody) -> bool:
        body = call.body
        if not body or body.lstrip()[:1] != b"{":
            return False
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return False
        return contains(value, self.expected)

    def __repr__(self) -> str:
        return "body contains " + json.dumps(self.expected, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class AllOf:
    """Predicate: every one of ``parts`` matches (the control API's ``query`` and ``body``)."""

    parts: tuple[Predicate, ...]

    def __call__(self, call: object) -> bool:
        return all(part(call) for part in self.parts)

    def __repr__(self) -> str:
        return " and ".join(repr(part) for part in self.parts)


def predicate_of(when: object) -> Predicate | None:
    """``when=`` as a predicate; ``TypeError``/``ValueError`` naming what is wrong."""
    if when is None:
        return None
    if isinstance(when, Mapping):
        if not when:
            raise ValueError("when={} matches every call; leave when out instead")
        check_json(when, "when")
        return BodyContains(dict(when))
    if isinstance(when, str | bytes | list | tuple | set) or not callable(when):
        raise TypeError(
            "when must be a callable taking the Call (call.json() is the request body) "
            f"or a dict the request's JSON body must contain; got {type(when).__name__}"
        )
    return when


def check_json(value: object, where: str, depth: int = 0) -> None:
    """``ValueError`` unless ``value`` is made of JSON values, naming where it is not."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"{where} is nested too deeply")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: keys must be strings (JSON object keys); got {key!r}")
            check_json(item, f"{where}[{key!r}]", depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_json(item, f"{where}[{index}]", depth + 1)
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise ValueError(
            f"{where} is not a JSON value (dict, list, str, int, float, bool or None); "
            f"got {type(value).__name__}"
        )
