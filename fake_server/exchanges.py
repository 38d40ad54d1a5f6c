"""What of each announced HTTP exchange is on the wire: the ``VirtualClock``'s transit ledger.

An exchange is one request of a clock-aware client and its reply. It is open from the client's
announcement until the client closes it; inside it, the request counts until the server has it,
each reply head until the client has the headers, and each streamed body byte until the client
has read it. Real time plays no part. Not thread-safe on its own: the clock locks around it.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass

__all__ = ["ExchangeLedger"]


@dataclass(slots=True)
class _Exchange:
    request: bool = True  # sent, not yet claimed by the server
    heads: int = 0  # reply heads sent, not yet claimed by the client
    bytes: int = 0  # streamed body bytes written, not yet read by the client

    @property
    def in_flight(self) -> bool:
        return self.request or self.heads > 0 or self.bytes > 0


class ExchangeLedger:
    """Open exchanges by id; ids are unique to one ledger (a random prefix and a counter)."""

    __slots__ = ("_exchanges", "_ids", "_prefix")

    def __init__(self) -> None:
        self._exchanges: dict[str, _Exchange] = {}
        self._ids = itertools.count(1)
        self._prefix = secrets.token_hex(4)

    def open(self) -> str:
        exchange = f"{self._prefix}-{next(self._ids)}"
        self._exchanges[exchange] = _Exchange()
        return exchange

    def arrived(self, exchange: str | None) -> bool:
        state = self._exchanges.get(exchange) if exchange else None
        if state is None:
            return False
        state.request = False
        return True

    def sent(self, exchange: str | None, size: int) -> None:
        state = self._exchanges.get(exchange) if exchange else None
        if state is None:
            return
        if size > 0:
            state.bytes += size
        else:
            state.heads += 1

    def received(self, exchange: str | None, size: int) -> None:
        state = self._exchanges.get(exchange) if exchange else None
        if state is None:
            return
        if size > 0:
            state.bytes = max(0, state.bytes - size)
        else:
            state.heads = max(0, state.heads - 1)

    def close(self, exchange: str | None) -> None:
        if exchange:
            self._exchanges.pop(exchange, None)

    def in_flight(self) -> int:
        """How many open exchanges have something on the wire right now."""
        return sum(1 for exchange in self._exchanges.values() if exchange.in_flight)

    def __len__(self) -> int:
        return len(self._exchanges)
