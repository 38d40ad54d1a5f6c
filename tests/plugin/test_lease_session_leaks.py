"""The plugin's per-worker session: its lease provider talks to the fake over aiohttp's client,
and closing the session gives back every socket and warns of nothing left open."""

from __future__ import annotations

import gc
import os
import warnings

import pytest

from pytest_createos._markers import DEFAULT_SHAPE
from pytest_createos._options import Options
from pytest_createos._session import Session
from pytest_createos.provider import Environment
from tests._helpers import open_fds

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(
        not os.path.isdir("/proc/self/fd"), reason="counts open files through /proc (Linux)"
    ),
]


def _lifecycles(count: int) -> None:
    """A session, ``count`` leases acquired and destroyed through its provider, closed."""
    session = Session(Options())
    try:
        fake = session.fake
        provider = session.lease_provider(live=False)
        env = Environment(
            company_id="c",
            environment_id="e",
            config={"apiUrl": fake.url, "apiKey": fake.api_key, "shape": DEFAULT_SHAPE},
        )
        for _ in range(count):
            lease = session.bridge.run(provider.acquire_lease(env, run_id="r"))
            sandbox_id = lease.provider_lease_id
            assert sandbox_id is not None
            assert fake.sandbox(sandbox_id).status == "running"
            session.bridge.run(provider.destroy_lease(env, sandbox_id, lease.metadata))
            assert fake.sandbox(sandbox_id).status == "destroyed"
    finally:
        session.close()


def test_lease_provider_leaves_no_socket_or_session_open_after_close() -> None:
    """After ``close()`` no fd is left open and no "Unclosed client session" or ResourceWarning
    is raised. (The first session leaves bashkit's process-wide runtimes open, once.)"""
    _lifecycles(1)
    gc.collect()
    before = open_fds()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _lifecycles(3)
        gc.collect()
    assert [str(w.message) for w in caught] == []
    assert open_fds() <= before  # earlier tests' leftovers may close meanwhile, never more
