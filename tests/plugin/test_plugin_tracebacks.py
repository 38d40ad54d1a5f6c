"""Which frames a failure shows: a provider error ends at the test's call, a bug keeps the
provider's frames, the bridge's relay frames never show, and pytest's options still apply."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

FAILS_WITH_503 = """
import pytest
from pytest_createos import HttpError

def acquire(run, provider, env):
    return run(provider.acquire_lease(env))

@pytest.mark.createos_fault("create_sandbox", HttpError(503))
def test_through_a_helper(createos_run, createos_provider, createos_env):
    marker = "a local of the test"
    acquire(createos_run, createos_provider, createos_env)
"""

A_BUG = """
import pytest
from pytest_createos.provider import _client

def test_a_bug_in_the_client(createos_run, createos_provider, createos_env, monkeypatch):
    async def broken(self, *args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(_client.CreateosClient, "request_json", broken)
    createos_run(createos_provider.acquire_lease(createos_env))
"""


def test_a_provider_error_ends_at_the_test_module_s_last_frame(inner: pytest.Pytester) -> None:
    """The helper in the test module is the last frame shown; nothing of the plugin, the
    provider or the standard library follows."""
    inner.makepyfile(test_helper=FAILS_WITH_503)
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            ">       acquire(createos_run, createos_provider, createos_env)",
            "",
            "test_helper.py:10: ",
            "_ _ _*",
            "",
            "run = *",
            "provider = *",
            "env = Environment(*",
            "",
            "    def acquire(run, provider, env):",
            ">       return run(provider.acquire_lease(env))",
            "*^^^^*",
            "E       pytest_createos.provider._errors.CreateosApiError: CreateOS request failed "
            "(HTTP 503) during sandbox lifecycle.",
            "",
            "test_helper.py:5: CreateosApiError",
        ],
        consecutive=True,
    )
    for internal in ("_bridge.py", "_provider.py", "_client.py", "contextlib.py"):
        assert internal not in out


def test_pytest_s_own_options_still_apply(inner: pytest.Pytester) -> None:
    """``--tb=short`` and ``-l`` shape the shortened report as they shape pytest's own;
    ``--fulltrace`` shows every frame, the bridge's too."""
    inner.makepyfile(test_helper=FAILS_WITH_503)
    short = inner.runpytest("--tb=short", "-l")
    short.assert_outcomes(failed=1)
    short.stdout.fnmatch_lines(
        [
            "test_helper.py:10: in test_through_a_helper",
            "    acquire(createos_run, createos_provider, createos_env)",
            "        marker     = 'a local of the test'",
            "test_helper.py:5: in acquire",
        ]
    )
    assert "_client.py" not in short.stdout.str()
    full = inner.runpytest("--fulltrace")
    full.stdout.fnmatch_lines(["*pytest_createos/_bridge.py:*", "*provider/_client.py:*"])


def test_a_bug_keeps_the_provider_s_frames_but_not_the_bridge_s(inner: pytest.Pytester) -> None:
    """Not a documented outcome: the provider's frames lead to the bug; the relay frames
    between the test and the provider's loop stay hidden."""
    inner.makepyfile(test_bug=A_BUG)
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*pytest_createos/provider/_provider.py:*", "E       RuntimeError: a bug"]
    )
    assert "_bridge.py" not in result.stdout.str()
