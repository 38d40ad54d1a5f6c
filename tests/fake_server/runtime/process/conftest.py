"""The process runtime's tests: ``fake`` here is a process-runtime fake in the test's loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest_asyncio

from fake_server import TransitionPolicy, VirtualClock

if TYPE_CHECKING:
    from fake_server import FakeCreateOS
    from tests._fakes import MakeFake


@pytest_asyncio.fixture(name="fake")
async def _fake(make_fake: MakeFake) -> FakeCreateOS:
    """VirtualClock, immediate transitions, the process runtime; no error recorded and no
    sandbox process left once it closes."""
    immediate = TransitionPolicy.immediate()
    return await make_fake(clock=VirtualClock(), transitions=immediate, runtime="process")
