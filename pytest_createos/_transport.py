"""The HTTP transport of the plugin's own lease provider: httpx over aiohttp's client.

The provider behind ``createos_lease`` and ``createos_leases`` always runs on the plugin's
asyncio loop (``_bridge``), so it can send its requests with aiohttp's client under httpx,
which costs about 0.3 ms less per request than httpcore here: a lease acquired and destroyed
is five requests, paid by every test that asks for one. ``createos_provider`` keeps httpx's
default transport, as it is the provider a project ships.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
from httpx_aiohttp import AiohttpTransport

from fake_server import tls_context

if TYPE_CHECKING:
    import httpx

__all__ = ["lease_transport"]


def lease_transport() -> httpx.AsyncBaseTransport:
    """A transport for one provider; its aiohttp session opens on the loop of first use."""
    return AiohttpTransport(verify=tls_context(), client=_session)


def _session() -> aiohttp.ClientSession:
    # No cookie jar: the API sets none, and ``fetch`` in the TypeScript provider keeps none.
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=tls_context()),
        cookie_jar=aiohttp.DummyCookieJar(),
    )
