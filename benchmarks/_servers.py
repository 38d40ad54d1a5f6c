"""The baselines the fake is compared with: bare aiohttp servers on loopback, and fake setup."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["BareServer", "bare_server", "fake_with_sandbox", "persist", "serve_fake"]

SHAPE = "s-1vcpu-1gb"


class BareServer:
    """A bare aiohttp app: the floor a fake built on aiohttp cannot beat."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        # The same runner settings the fake uses, so only the handlers differ.
        runner = web.AppRunner(
            self.app,
            handle_signals=False,
            handler_cancellation=True,
            access_log=None,
            shutdown_timeout=0.0,
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


@contextlib.asynccontextmanager
async def bare_server(app: web.Application) -> AsyncIterator[BareServer]:
    server = BareServer(app)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def serve_fake(*, persisted: bool = False) -> AsyncIterator[FakeCreateOS]:
    """The fake as tests use it: in this loop, virtual clock, immediate transitions;
    ``persisted``: saving its state in a temporary directory, as ``serve --state-dir`` does."""
    clock = VirtualClock()
    try:
        with contextlib.ExitStack() as stack:
            fake = FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate())
            if persisted:
                persist(fake, stack)
            async with fake:
                yield fake
    finally:
        clock.close()


def persist(fake: FakeCreateOS, stack: contextlib.ExitStack) -> None:
    """Keep ``fake``'s state in a temporary directory removed with ``stack``."""
    from fake_server.persist import Persistence

    directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-state-")))
    Persistence(fake, directory / "state", on_error=_raise)


def _raise(message: str) -> None:
    raise RuntimeError(message)


async def fake_with_sandbox(
    fake: FakeCreateOS, session: aiohttp.ClientSession
) -> tuple[str, dict[str, Any]]:
    """Create a sandbox on ``fake`` and read it once (running); returns its id and JSON body."""
    async with session.post(f"{fake.api_url}/sandboxes", json={"shape": SHAPE}) as response:
        if response.status != 200:
            raise RuntimeError(f"create_sandbox answered HTTP {response.status}")
        sandbox_id = str((await response.json())["data"]["id"])
    async with session.get(f"{fake.api_url}/sandboxes/{sandbox_id}") as response:
        body: dict[str, Any] = await response.json()
    if body["data"]["status"] != "running":
        raise RuntimeError("the sandbox did not reach running")
    return sandbox_id, body
