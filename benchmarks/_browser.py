"""Debian's Chromium driven by Playwright, on a loopback of its own: shared by the dashboard's
browser tests (tests/reliability/test_dashboard_browser.py) and its benchmark.

Chromium aborts requests in flight (``ERR_NETWORK_CHANGED``) whenever an interface or an
address changes on the machine, which other programs (other fakes' sandbox networks) do all the
time. So, where the machine lets us (root), the browser runs in a network namespace holding only
``lo``, and a relay listening there forwards each connection to the fake on the host's
loopback. Without that right it runs beside the fake, as any browser would.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import stat
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "Browser", "chromium_missing", "open_browser"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_missing() -> str | None:
    """Why the browser cannot run here, or ``None``."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    return None


class _Relay:
    """Accepts connections on a socket in the browser's namespace, pipes each to ``port``."""

    def __init__(self, listener: Any) -> None:
        self.port = 0
        self._listener = listener
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.target = 0

    def start(self) -> None:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        future.result(10)

    async def _serve(self) -> None:
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._server = await asyncio.start_server(self._pipe, sock=self._listener)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(OSError):
                dst.close()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))

    def close(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


class Browser:
    """A launched Chromium; ``origin(fake_url)`` is where its pages reach that fake."""

    def __init__(self, browser: Any, relay: _Relay | None) -> None:
        self.browser = browser
        self._relay = relay

    def origin(self, fake_url: str) -> str:
        if self._relay is None:
            return fake_url
        self._relay.target = int(fake_url.rsplit(":", 1)[1])
        return f"http://127.0.0.1:{self._relay.port}"

    def page(self) -> Any:
        """A fresh page in a fresh context (no cookies shared between tests)."""
        return self.browser.new_context().new_page()


def _isolated() -> tuple[Any, _Relay, Path] | None:
    """A namespace with only ``lo``, a relay into it and a launcher that enters it."""
    try:
        from fake_server.runtime.process.netns import NetNamespace, nsenter_path

        namespace = NetNamespace()
        nsenter = nsenter_path()
    except (OSError, Exception):
        return None
    relay = _Relay(namespace.socket())
    relay.start()
    folder = Path(tempfile.mkdtemp(prefix="createos-chromium-"))
    launcher = folder / "chromium"
    launcher.write_text(
        "#!/bin/sh\n"
        f"exec {shlex.quote(nsenter)} --net={shlex.quote(namespace.path)} -- "
        f'{CHROMIUM} "$@"\n'
    )
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return namespace, relay, launcher


@contextlib.contextmanager
def open_browser() -> Iterator[Browser]:
    """Playwright's Chromium (the system's, never a download), isolated where possible."""
    from playwright.sync_api import sync_playwright

    isolated = _isolated()
    executable = str(isolated[2]) if isolated else CHROMIUM
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            try:
                yield Browser(browser, isolated[1] if isolated else None)
            finally:
                browser.close()
    finally:
        if isolated is not None:
            namespace, relay, launcher = isolated
            relay.close()
            namespace.close()
            launcher.unlink()
            launcher.parent.rmdir()
