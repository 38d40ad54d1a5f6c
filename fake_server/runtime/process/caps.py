"""Bounds on what sandboxes hold of the fake's own servers inside their network: the DNS
relay (``resolver``), the metadata endpoint (``metadata``) and each in-guest agent (``agent``).

Each connection or query in flight holds a file descriptor of the fake's process (two for a
relayed one). Without bounds one sandbox could take them all: 300 TCP connections to the DNS
relay held 929 descriptors, a 3 s UDP flood 11,301, and 1,500 connections to an agent gave
thousands of ``EMFILE`` errors and API timeouts for every client. So each server counts what
each sandbox (by its address) holds and what all of them hold together; past either bound a
new connection is closed at once and a new query dropped, as a busy server's are.
"""

from __future__ import annotations

from collections import Counter
from typing import Generic, TypeVar

__all__ = ["Caps"]

_K = TypeVar("_K")


class Caps(Generic[_K]):
    """``each`` per key (a sandbox's address), ``total`` for all keys."""

    def __init__(self, each: int, total: int) -> None:
        self.each = each
        self.total = total
        self._held: Counter[_K] = Counter()
        self._sum = 0
        #: How many were refused, for the figures a test reads.
        self.refused = 0

    def take(self, key: _K) -> bool:
        """One more for ``key``, or ``False`` (nothing taken) past a bound."""
        if self._held[key] >= self.each or self._sum >= self.total:
            self.refused += 1
            return False
        self._held[key] += 1
        self._sum += 1
        return True

    def give(self, key: _K) -> None:
        """What ``take`` took goes back."""
        if self._held[key] > 0:
            self._held[key] -= 1
            self._sum -= 1
            if not self._held[key]:
                del self._held[key]

    def held(self, key: _K | None = None) -> int:
        """What ``key`` holds, or everyone together."""
        return self._sum if key is None else self._held[key]
