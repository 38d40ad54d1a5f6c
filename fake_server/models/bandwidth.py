"""A sandbox's transfer quota and counters (``GET …/bandwidth``, ``POST …/bandwidth/recharge``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_QUOTA_BYTES", "Bandwidth"]

#: The quota a new sandbox starts with; ``-1`` means unmetered (TS SDK ``BandwidthView``).
DEFAULT_QUOTA_BYTES = 10 * 1024**3


@dataclass(slots=True)
class Bandwidth:
    """Egress bytes count against the quota; ingress bytes are observed, never enforced.

    In the fake, bytes leave the sandbox through downloads and command output, and enter it
    through uploads and stdin: the counters move when data flows through the API.
    """

    quota_bytes: int = DEFAULT_QUOTA_BYTES
    used_bytes: int = 0
    ingress_bytes: int = 0

    @property
    def unmetered(self) -> bool:
        return self.quota_bytes < 0

    @property
    def remaining_bytes(self) -> int:
        if self.unmetered:
            return -1
        return max(0, self.quota_bytes - self.used_bytes)

    @property
    def capped(self) -> bool:
        return not self.unmetered and self.used_bytes >= self.quota_bytes

    def sent(self, size: int) -> None:
        self.used_bytes += max(0, size)

    def received(self, size: int) -> None:
        self.ingress_bytes += max(0, size)

    def recharge(self, add_bytes: int) -> None:
        if not self.unmetered:
            self.quota_bytes += add_bytes

    def copy(self) -> Bandwidth:
        """A fork's counters: the source's quota, fresh usage."""
        return Bandwidth(quota_bytes=self.quota_bytes)
