"""The provider's error tree; every message is fixed text from the spec (no secrets, no URLs).

```
CreateosError                  any provider failure; str(e) is the spec's exact message
├── CreateosApiError           a non-2xx API answer: .status and the fixed operation .label
├── CreateosCleanupError       ambiguous creation or unconfirmed termination: destroy the lease
├── ConnectionFailedError      no usable answer (transport failure, redirect): may be retried
├── OperationTimeout           (in _signal) a deadline fired
└── OperationCancelled         (in _signal) the host cancelled the work
```
"""

from __future__ import annotations

__all__ = [
    "CONNECTION_FAILED",
    "ConnectionFailedError",
    "CreateosApiError",
    "CreateosCleanupError",
    "CreateosError",
]

CONNECTION_FAILED = "CreateOS connection failed."


class CreateosError(Exception):
    """A CreateOS provider failure whose message is safe to show (no keys, bodies or URLs)."""


class CreateosApiError(CreateosError):
    """CreateOS answered with a non-2xx status; the body is never read, so nothing leaks."""

    status: int
    label: str

    def __init__(self, status: int, label: str) -> None:
        super().__init__(f"CreateOS request failed (HTTP {status}) during {label}.")
        self.status = status
        self.label = label

    def __reduce__(self) -> tuple[type[CreateosApiError], tuple[int, str]]:
        # Keeps the error picklable (pytest-xdist ships exceptions between processes).
        return (type(self), (self.status, self.label))


class CreateosCleanupError(CreateosError):
    """Remote state is unknown (creation or termination unconfirmed); only destroy recovers."""


class ConnectionFailedError(CreateosError):
    """No usable answer came back: the request failed in transport or was redirected.

    Its own type so callers decide on the kind of failure, never on the message text.
    """

    def __init__(self) -> None:
        super().__init__(CONNECTION_FAILED)
