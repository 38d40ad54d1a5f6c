"""The suite's fake factory (``tests/_fakes.py``): every fake it made is closed at teardown, and
a fake that recorded an error of its own fails the test that made it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

INNER = """
import httpx
import pytest

from fake_server import VirtualClock

URLS = []


@pytest.mark.asyncio
async def test_two_fakes(make_fake):
    for _ in range(2):
        fake = await make_fake(clock=VirtualClock())
        URLS.append(fake.url)


@pytest.mark.asyncio
async def test_a_recorded_error(make_fake):
    fake = await make_fake(clock=VirtualClock())
    fake.errors.append("a handler failed")


@pytest.mark.asyncio
async def test_a_recorded_error_the_test_expects(make_fake):
    fake = await make_fake(clock=VirtualClock(), errors_ok=True)
    fake.errors.append("a handler failed")


def test_both_were_closed():
    for url in URLS:
        with pytest.raises(httpx.ConnectError):
            httpx.get(url + "/readyz", timeout=5)
"""


def test_the_factory_closes_its_fakes_and_fails_on_a_recorded_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makeconftest("from tests._fakes import make_fake\n\n__all__ = ['make_fake']\n")
    pytester.makepyfile(test_inner=INNER)
    # pytest-benchmark warns in an inner run of an xdist worker (the suite's `-n 2`).
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:benchmark")
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(
        ["E *AssertionError: errors the fake recorded: *'a handler failed'*"]
    )
