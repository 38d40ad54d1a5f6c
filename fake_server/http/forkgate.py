"""A fork's copy of a sandbox's files runs off the event loop; meanwhile the sandbox stays as
it was: every request naming it waits until the copy is made (``fork_gate``), the fork's
own included, so a second fork of it, a resume or a write comes after."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.http.keys import STATE_KEY

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aiohttp.typedefs import Handler

    from fake_server.http.state import AppState

__all__ = ["copying", "fork_gate"]


@contextlib.asynccontextmanager
async def copying(state: AppState, sandbox_id: str) -> AsyncIterator[None]:
    """While the block runs (a fork's copy), requests naming ``sandbox_id`` wait; it starts
    once another fork's copy of it ended (two forks of one sandbox, sent together, both went
    past the gate before either copy began)."""
    await _passed(state, sandbox_id)
    gate = asyncio.get_running_loop().create_future()
    state.forking[sandbox_id] = gate
    try:
        yield
    finally:
        del state.forking[sandbox_id]
        gate.set_result(None)


async def _passed(state: AppState, sandbox_id: str) -> None:
    """Wait until no fork is copying ``sandbox_id`` (another may start as one ends)."""
    gate = state.forking.get(sandbox_id)
    while gate is not None:
        await asyncio.shield(gate)
        gate = state.forking.get(sandbox_id)


@web.middleware
async def fork_gate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Hold a request naming a sandbox whose files a fork is copying until the copy is made."""
    state = request.app[STATE_KEY]
    if state.forking:
        await _passed(state, request.match_info.get("sandbox_id", ""))
    return await handler(request)
