"""The TLS context httpx clients of the fake share, built once per process."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

__all__ = ["tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context per process for httpx clients of the fake (``verify=tls_context()``).

    Every httpx client or transport built without ``verify=`` loads the CA bundle anew (about
    25 ms); a suite that builds a client per test spends seconds on it. The context is never
    changed after it is built, so sharing it is safe.
    """
    import httpx  # here: a fake whose clients are not httpx's never loads it

    return httpx.create_ssl_context()
