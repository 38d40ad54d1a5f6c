"""Debian's Chromium driven by Playwright, on a loopback of its own: shared by the dashboard's
browser tests (tests/fake_server/dashboard/test_dashboard_browser.py) and its benchmark.

Chromium aborts requests in flight (``ERR_NETWORK_CHANGED``) whenever an interface or an
address changes on the machine, which other programs (other fakes' sandbox networks) do all the
time. So, where the machine lets us (root), the browser runs in a network namespace holding only
``lo``, and a relay per port of the fake (its API and dashboard, its preview URLs) listens there
and forwards each connection to that port on the host's loopback. Without that right it runs
beside the fake, as any browser would. Either way ``*.localhost`` names resolve to the
browser's own loopback, as in any browser, so a preview hostname reaches its relay.
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

    def __init__(self, listener: Any, target: int) -> None:
        self.port = 0
        self._listener = listener
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.target = target

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
        """Pipe one connection both ways; both ends are closed however it ends (a relay
        closed while the browser keeps a connection open cancels this: its sockets must not
        be left to the garbage collector)."""
        up_writer: asyncio.StreamWriter | None = None
        try:
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
            except OSError:
                return

            async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                with contextlib.suppress(OSError):
                    while data := await src.read(65536):
                        dst.write(data)
                        await dst.drain()
                with contextlib.suppress(OSError):
                    dst.close()

            await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
        finally:
            for end in (writer, up_writer):
                if end is not None:
                    end.close()

    def close(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            pipes = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in pipes:
                task.cancel()
            await asyncio.gather(*pipes, return_exceptions=True)  # their ends closed
            await asyncio.sleep(0)  # the transports' own close callbacks run

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


class Browser:
    """A launched Chromium; ``origin(fake_url)`` is where its pages reach that fake."""

    def __init__(self, browser: Any, namespace: Any) -> None:
        self.browser = browser
        self._namespace = namespace
        self._relays: dict[int, _Relay] = {}

    def origin(self, fake_url: str) -> str:
        """``http://127.0.0.1:PORT`` of the fake (or of its preview URLs) as pages reach it."""
        return f"http://127.0.0.1:{self.port(int(fake_url.rsplit(':', 1)[1].strip('/')))}"

    def port(self, target: int) -> int:
        """The port pages use for the fake's port ``target`` (its relay's, when isolated)."""
        if self._namespace is None:
            return target
        relay = self._relays.get(target)
        if relay is None:
            relay = self._relays[target] = _Relay(self._namespace.socket(), target)
            relay.start()
        return relay.port

    def close(self) -> None:
        for relay in self._relays.values():
            relay.close()
        self._relays.clear()

    def page(self) -> Any:
        """A fresh page in a fresh context (no cookies shared between tests)."""
        return self.browser.new_context().new_page()


def _isolated() -> tuple[Any, Path] | None:
    """A namespace with only ``lo`` and a launcher that enters it."""
    try:
        from fake_server.runtime.process.net.netns import NetNamespace, nsenter_path

        namespace = NetNamespace()
        nsenter = nsenter_path()
    except (OSError, Exception):
        return None
    folder = Path(tempfile.mkdtemp(prefix="createos-chromium-"))
    launcher = folder / "chromium"
    launcher.write_text(
        "#!/bin/sh\n"
        f"exec {shlex.quote(nsenter)} --net={shlex.quote(namespace.path)} -- "
        f'{CHROMIUM} "$@"\n'
    )
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return namespace, launcher


@contextlib.contextmanager
def open_browser() -> Iterator[Browser]:
    """Playwright's Chromium (the system's, never a download), isolated where possible."""
    from playwright.sync_api import sync_playwright

    isolated = _isolated()
    executable = str(isolated[1]) if isolated else CHROMIUM
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            launched = Browser(browser, isolated[0] if isolated else None)
            try:
                yield launched
            finally:
                browser.close()
                launched.close()
    finally:
        if isolated is not None:
            namespace, launcher = isolated
            namespace.close()
            launcher.unlink()
            launcher.parent.rmdir()
