"""A TLS listener for the HTTP/2 front, for the tests of ALPN: the fake serves plain HTTP, so
the front is put on TLS here with a certificate made for the test (``openssl``, skipped
without it) and a small app."""

from __future__ import annotations

import contextlib
import shutil
import ssl
import subprocess
from typing import TYPE_CHECKING

import pytest
from aiohttp import web

from fake_server.clock import RealClock
from fake_server.http.h2front import H2Runner

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

__all__ = ["serve_tls"]


def _certificate(directory: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl makes the test's certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@contextlib.asynccontextmanager
async def serve_tls(directory: Path) -> AsyncIterator[tuple[str, ssl.SSLContext]]:
    """``https://127.0.0.1:PORT`` serving ``/healthz`` through ``H2Runner`` with ALPN
    offering ``h2`` and ``http/1.1``, and a client context trusting its certificate."""
    cert, key = _certificate(directory)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    server_side.set_alpn_protocols(["h2", "http/1.1"])
    client_side = ssl.create_default_context(cafile=str(cert))

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"up": True})

    app = web.Application()
    app.router.add_get("/healthz", health)
    runner = H2Runner(app, clock=RealClock(), handler_kwargs={"access_log": None})
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_side)
    await site.start()
    try:
        yield f"https://127.0.0.1:{runner.addresses[0][1]}", client_side
    finally:
        await runner.cleanup()
