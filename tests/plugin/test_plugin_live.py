"""Live mode (--createos-live) wired to a stand-in "real API": a separately started fake."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from fake_server import FakeCreateOS

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.plugin.conftest import MakeIni

LIVE_TESTS = """
import os
import pytest
from fake_server.faults import HttpError

@pytest.mark.createos_live
def test_env_points_at_the_live_api(createos_env, createos_sdk, createos_provider):
    assert createos_env.config["apiUrl"] == os.environ["CREATEOS_API_URL"]
    assert createos_env.config["shape"] == "s-2vcpu-2gb"
    assert createos_sdk.who_am_i().stats.total == 0
    assert createos_provider.validate_config(createos_env.config).ok

@pytest.mark.createos_live
def test_needs_the_fake(createos_fake):
    pass

@pytest.mark.createos_live
@pytest.mark.createos_fault("get_sandbox", HttpError(503))
def test_fault(createos_env):
    pass

def test_unmarked_tests_stay_on_the_fake(createos_env, createos_fake):
    assert createos_env.config["apiUrl"] == createos_fake.url
"""


@pytest.fixture(name="stand_in")
def _stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCreateOS]:
    fake = FakeCreateOS(seed=3).start()
    monkeypatch.setenv("CREATEOS_API_URL", fake.url)
    monkeypatch.setenv("CREATEOS_API_KEY", fake.api_key)
    monkeypatch.setenv("CREATEOS_SHAPE", "s-2vcpu-2gb")
    yield fake
    fake.close()


def test_live_mode_runs_marked_tests_against_the_api(
    stand_in: FakeCreateOS, inner: pytest.Pytester
) -> None:
    """Marked tests get the live API; fake-only and fault tests skip with a reason."""
    inner.makepyfile(LIVE_TESTS)
    result = inner.runpytest("--createos-live", "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "createos: live API for tests marked createos_live, fake for the rest (seed 0, "
            "leak check fail, unfired faults fail)",
            "*createos: this test needs the fake and is skipped under --createos-live",
            "*createos: fault tests run only on the fake, not under --createos-live",
        ]
    )
    assert stand_in.url not in result.stdout.str()
    assert stand_in.api_key not in result.stdout.str()


def test_live_mode_without_a_key_stops_the_run(
    monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester, make_ini: MakeIni
) -> None:
    """No ``CREATEOS_API_KEY``: a CI job that meant to test live must not pass green."""
    monkeypatch.delenv("CREATEOS_API_KEY", raising=False)
    make_ini(extra="createos_live = true")
    pytester.makepyfile(LIVE_ONLY)
    result = pytester.runpytest()
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "ERROR: --createos-live: createos live mode needs CREATEOS_API_KEY in the "
            "environment; pass --createos-live-optional (ini createos_live_optional = true) to "
            "skip the live tests instead"
        ]
    )


def test_optional_live_mode_without_a_key_skips(
    monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester, make_ini: MakeIni
) -> None:
    """Explicitly optional (ini twin here): live tests skip and say what is missing."""
    monkeypatch.delenv("CREATEOS_API_KEY", raising=False)
    make_ini(extra="createos_live_optional = true")
    pytester.makepyfile(LIVE_ONLY)
    result = pytester.runpytest("-rs", "--createos-live")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*createos live mode needs CREATEOS_API_KEY in the environment"])


LIVE_ONLY = """
import pytest

@pytest.mark.createos_live
def test_live(createos_env):
    pass
"""


def test_without_live_mode_marked_tests_run_on_the_fake(
    stand_in: FakeCreateOS, inner: pytest.Pytester
) -> None:
    """``createos_live`` alone changes nothing: the test runs against the fake."""
    inner.makepyfile(
        """
        import pytest

        @pytest.mark.createos_live
        def test_marked(createos_env, createos_fake):
            assert createos_env.config["apiUrl"] == createos_fake.url
        """
    )
    inner.runpytest().assert_outcomes(passed=1)
