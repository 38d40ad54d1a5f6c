"""Seeded identifiers that look like the real ones: ULIDs on the fake clock, names, private IPs."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from faker import Generator
from faker.providers.lorem.en_US import Provider as _Lorem

if TYPE_CHECKING:
    from fake_server.clock import Clock

__all__ = ["IdGenerator", "check_seed"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Short, lowercase, letters-only words make names such as "river-orange-4f2a".
_WORDS = tuple(w for w in _Lorem.word_list if w.isalpha() and 3 <= len(w) <= 8)


def check_seed(seed: object) -> int:
    """A seed is an integer >= 0: ``random`` seeds ``-n`` like ``n``, so a negative seed would
    silently repeat its positive twin's ids and API key."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer >= 0; got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be an integer >= 0; got {seed}")
    return seed


class IdGenerator:
    """Every id, key, name and address a fake hands out; reseeding makes a run reproducible."""

    def __init__(self, seed: int, clock: Clock) -> None:
        self._clock = clock
        self._offset = 0.0
        self.reseed(seed)

    def rebase(self, epoch: float) -> None:
        """ULID times count from ``epoch`` (Unix seconds) as of the clock's reading now.

        After ``rebase(DEFAULT_EPOCH)`` an id minted ``s`` clock seconds later carries the time
        ``epoch + s``, whatever the clock read before: ids no longer depend on earlier tests.
        """
        self._offset = self._clock.time() - epoch

    def reseed(self, seed: int) -> None:
        """Restart the sequence, so the same seed yields the same ids again."""
        self.seed = seed
        self._rng = random.Random(seed)
        self._pid = 100
        # faker's own generator, seeded separately: realistic addresses without the cost of
        # a full ``Faker()`` (150 ms) per fake.
        self._faker = Generator()
        self._faker.seed_instance(seed)
        self._internet: Any = None

    def ulid(self) -> str:
        """26 Crockford base32 chars: 48 bits of fake-clock milliseconds, 80 seeded random bits."""
        now = self._clock.time()
        # Rounded to the microsecond first: (origin + s) - origin is not always s in floats.
        exact = now * 1000 if not self._offset else round((now - self._offset) * 1000, 3)
        millis = int(exact) & ((1 << 48) - 1)
        value = (millis << 80) | self._rng.getrandbits(80)
        chars = []
        for _ in range(26):
            chars.append(_CROCKFORD[value & 31])
            value >>= 5
        return "".join(reversed(chars))

    def sandbox_id(self) -> str:
        return "sb-" + self.ulid()

    def process_id(self) -> str:
        return "proc-" + self.ulid()

    def user_id(self) -> str:
        return "usr-" + self.ulid()

    def api_key(self) -> str:
        return "cos_live_" + f"{self._rng.getrandbits(128):032x}"

    def access_token(self) -> str:
        """A sandbox access token (a delegated credential for one sandbox)."""
        return "sbx_" + f"{self._rng.getrandbits(192):048x}"

    def pid(self) -> int:
        """Guest pids grow like a fresh VM's would."""
        self._pid += self._rng.randint(1, 7)
        return self._pid

    def name(self) -> str:
        first, second = self._rng.choice(_WORDS), self._rng.choice(_WORDS)
        return f"{first}-{second}-{self._rng.getrandbits(16):04x}"

    def private_ip(self) -> str:
        """A private 10.0.0.0/8 address from faker (its internet provider loads lazily)."""
        if self._internet is None:
            from faker.providers.internet import Provider as Internet

            self._internet = Internet(self._faker)
        address: str = self._internet.ipv4_private(address_class="a")
        return address

    def spawn_ms(self) -> float:
        return round(self._rng.uniform(30.0, 100.0), 1)
