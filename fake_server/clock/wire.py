"""What of each announced HTTP exchange is on the wire (docs/time.md, rule 3).

The request of an exchange counts until the server has it, or until a reply head reaches the
client, whoever answered (a mock transport, another host: only what reaches the fake is
counted after that); each reply head the fake sent counts until the client has the headers,
each streamed body byte until the client has read it. Real time plays no part. Not
thread-safe on its own: the clock locks around it.
"""

from __future__ import annotations

import itertools
import secrets

__all__ = ["ExchangeLedger"]


class ExchangeLedger:
    """Open exchanges by id (a random prefix and a counter) and what each has in flight."""

    __slots__ = ("_ids", "_in_flight", "_prefix", "_requests")

    def __init__(self) -> None:
        self._in_flight: dict[str, int] = {}  # reply heads and body bytes not yet read
        self._requests: set[str] = set()  # sent, not yet claimed by the server
        self._ids = itertools.count(1)
        self._prefix = secrets.token_hex(4)

    def open(self) -> str:
        exchange = f"{self._prefix}-{next(self._ids)}"
        self._in_flight[exchange] = 0
        self._requests.add(exchange)
        return exchange

    def arrived(self, exchange: str | None) -> bool:
        """The server has the request: True when the exchange is open."""
        self._requests.discard(exchange or "")
        return exchange in self._in_flight

    def sent(self, exchange: str | None, units: int) -> None:
        """A reply head (one unit) or ``units`` body bytes are about to go out."""
        if exchange in self._in_flight:
            self._in_flight[exchange] += units

    def received(self, exchange: str | None, units: int, *, head: bool = False) -> None:
        """The client has a head (one unit, ``head``) or has read ``units`` body bytes.

        A head means the request is no longer on its way, even if the fake never saw it: a
        reply from anybody else holds nothing from here on."""
        if exchange in self._in_flight:
            self._in_flight[exchange] = max(0, self._in_flight[exchange] - units)
            if head:
                self._requests.discard(exchange)

    def close(self, exchange: str | None) -> None:
        self._in_flight.pop(exchange or "", None)
        self._requests.discard(exchange or "")

    def in_flight(self) -> int:
        """How many open exchanges have something on the wire right now."""
        return sum(1 for e, units in self._in_flight.items() if units or e in self._requests)

    def __len__(self) -> int:
        return len(self._in_flight)
