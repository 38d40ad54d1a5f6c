"""Paging of every list route: the page size the service allows and the ``pagination`` object."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from fake_server.models.errors import BadRequest

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["MAX_LIMIT", "page", "page_limit", "window"]

MAX_LIMIT = 500

_T = TypeVar("_T")


def page_limit(limit: int) -> int:
    """A list's page size: past 500 it is clamped to 500, as the service does (TS
    ``COMPATIBILITY.md`` 0.6.0: "The server clamps ``limit`` to **500**"; ``http.ts`` pages by
    the count it got); 0 is refused (no source shows the service's answer)."""
    if limit < 1:
        raise BadRequest("must be at least 1", field="limit")
    return min(limit, MAX_LIMIT)


def window(limit: int, offset: int) -> tuple[int, int]:
    """A list's page size (``page_limit``) and its offset, refused below 0."""
    limit = page_limit(limit)
    if offset < 0:
        raise BadRequest("must be >= 0", field="offset")
    return limit, offset


def page(items: Sequence[_T], limit: int, offset: int) -> tuple[list[_T], dict[str, int]]:
    """One page and its ``pagination`` object (the list envelope every list route uses)."""
    limit, offset = window(limit, offset)
    chunk = list(items[offset : offset + limit])
    return chunk, {"total": len(items), "limit": limit, "offset": offset, "count": len(chunk)}
