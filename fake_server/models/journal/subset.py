"""JSON subset matching, shared by ``when=`` of faults and ``json=`` of ``fake.calls``."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["contains"]


def contains(actual: object, expected: object) -> bool:
    """``expected`` is a subset of ``actual``: objects by their fields (at any depth), lists
    and scalars exactly (``True`` is not ``1``)."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and contains(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(contains(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    return actual == expected
