"""An account's credit: the service refuses cost-incurring calls with 402 when it has none
(which calls: ``Operation.costs_credit`` in ``fake_server.operations``).

The fake charges nothing: the balance changes only when a test sets it (``FakeCreateOS``,
the control API, the plugin's marker) or runs it out (the ``ExhaustCredit`` fault action).
"""

from __future__ import annotations

import math

from fake_server.models.errors import PaymentRequired

__all__ = ["Credit", "check_balance"]

#: The message of the 402 (the TS SDK's own text for a 402 says "insufficient credit").
NO_CREDIT = "insufficient credit; top up the account to continue"


def check_balance(balance: object) -> float | None:
    """``None`` (unlimited) or a finite number >= 0; anything else is a ``ValueError``."""
    if balance is None:
        return None
    if (
        isinstance(balance, bool)
        or not isinstance(balance, int | float)
        or not math.isfinite(balance)
        or balance < 0
    ):
        raise ValueError("credit must be null (unlimited) or a number >= 0")
    return float(balance)


class Credit:
    """One account's balance; ``None`` is unlimited (the default)."""

    def __init__(self) -> None:
        self.balance: float | None = None

    def set(self, balance: float | None) -> None:
        self.balance = check_balance(balance)

    def require(self) -> None:
        """402 ``payment_required`` when the balance is spent; called after the owner check."""
        if self.balance is not None and self.balance <= 0:
            raise PaymentRequired(NO_CREDIT)
