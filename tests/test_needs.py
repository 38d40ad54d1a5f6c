"""A test needing what the README's install does not bring skips with the line that installs
it on a developer's machine, and fails with that line under ``CI=true`` (``tests/_needs.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests._needs import needs, needs_command, needs_module

if TYPE_CHECKING:
    import pytest

CONFTEST = """
from tests._needs import act

def pytest_runtest_setup(item):
    act(item)
"""
INI = """
[pytest]
addopts = -p no:cacheprovider -p no:hypothesispytest -p no:benchmark
markers =
    needs(reason): a missing need
"""
TESTS = """
from tests._needs import needs

pytestmark = needs("nftables' nft", "apt-get install nftables")

def test_uses_nft():
    pass
"""


def test_a_missing_need_skips_with_its_install_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *: needs nftables' nft: apt-get install nftables"])


def test_under_ci_a_missing_need_fails_with_its_install_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "CI=true and needs nftables' nft: apt-get install nftables (.ci/run installs it)",
        ]
    )


def test_what_is_here_adds_no_need() -> None:
    """An installed module or a program on PATH: a mark that does nothing (no ``needs``)."""
    for mark in (
        needs(None, "anything"),
        needs_module("pytest", "pytest", "pip install pytest"),
        needs_command("sh", "a shell", "apt-get install dash"),
    ):
        assert mark.name == "skipif"
        assert mark.args == (False,)


def test_what_is_missing_is_named_with_its_install_line() -> None:
    module = needs_module("no_such_module_here", "no-such-dist", "pip install no-such-dist")
    command = needs_command("no-such-program-here", "the program", "apt-get install it")
    assert (module.name, module.args) == (
        "needs",
        ("needs no-such-dist: pip install no-such-dist",),
    )
    assert (command.name, command.args) == ("needs", ("needs the program: apt-get install it",))
