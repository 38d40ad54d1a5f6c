"""A CreateosProvider whose requests reach a fake on a ``VirtualClock`` without the clock
transport (docs/time.md, rule 3).

Such a provider's deadlines run on the fake's clock, but its requests report nothing: the clock
cannot see them on the wire, and a real network delay (a loaded machine, a slow first
connection) lets it jump to the provider's deadline. The provider itself has no clock hooks (a
project ships it), so the fake tells: the provider names itself in its ``User-Agent``, and a
request of it without an exchange id, to a fake on a virtual clock, gets the fake's notice,
with the one line that fixes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.clock.virtual import VirtualClock

if TYPE_CHECKING:
    from fake_server.clock.base import Clock

__all__ = ["PROVIDER_AGENT", "UNREPORTED", "unreported_provider"]

#: How the provider's ``User-Agent`` starts (``pytest-createos/0.1.0``).
PROVIDER_AGENT = "pytest-createos/"

UNREPORTED = (
    "createos: a CreateosProvider sent requests to this fake without "
    "fake_server.clock_transport, so the fake's VirtualClock cannot see them on the wire and "
    "the provider's deadlines can fire during a real network delay; build it with "
    "CreateosProvider(clock=clock, transport=fake_server.clock_transport(clock))"
)


def unreported_provider(clock: Clock, user_agent: str | None, exchange: str | None) -> bool:
    """Whether a request is the provider's, without an exchange id, to a virtual clock's fake."""
    return (
        exchange is None
        and isinstance(clock, VirtualClock)
        and (user_agent or "").startswith(PROVIDER_AGENT)
    )
