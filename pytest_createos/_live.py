"""Live mode: where the real CreateOS API is and which tests go there."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.models.journal.recording import REDACTED, secret_name
from pytest_createos._markers import DEFAULT_SHAPE
from pytest_createos.provider import Environment
from pytest_createos.provider._config import DEFAULT_API_URL

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["LIVE_COMPANY", "LIVE_ENVIRONMENT", "LiveTarget", "RedactedConfig", "live_target"]

LIVE_COMPANY = "pytest-createos"
LIVE_ENVIRONMENT = "pytest-createos-live"


class RedactedConfig(dict[str, Any]):
    """A provider config whose repr hides the API key (the journal's redaction table).

    pytest prints fixture values in failure tracebacks, and ``Environment``'s repr includes its
    config; this keeps a live key (or any key) out of test reports. It is a plain ``dict``
    otherwise, so it compares equal to one.
    """

    def __repr__(self) -> str:
        shown = {k: (REDACTED if secret_name(k) else v) for k, v in self.items()}
        return repr(shown)


@dataclass(frozen=True, slots=True)
class LiveTarget:
    """The real API from ``CREATEOS_API_URL``, ``CREATEOS_API_KEY`` and ``CREATEOS_SHAPE``."""

    api_url: str
    api_key: str = field(default="", repr=False)  # a secret: never in reprs or reports
    shape: str = DEFAULT_SHAPE

    def environment(self, *, reuse_lease: bool) -> Environment:
        config = RedactedConfig(
            apiUrl=self.api_url,
            apiKey=self.api_key,
            shape=self.shape,
            reuseLease=reuse_lease,
        )
        return Environment(LIVE_COMPANY, LIVE_ENVIRONMENT, config)


def live_target(environ: Mapping[str, str] | None = None) -> LiveTarget | str:
    """The target, or the reason live tests must skip (never the key's value)."""
    env = os.environ if environ is None else environ
    key = env.get("CREATEOS_API_KEY", "").strip()
    if not key:
        return "createos live mode needs CREATEOS_API_KEY in the environment"
    url = env.get("CREATEOS_API_URL", "").strip() or DEFAULT_API_URL
    shape = env.get("CREATEOS_SHAPE", "").strip() or DEFAULT_SHAPE
    return LiveTarget(api_url=url, api_key=key, shape=shape)
