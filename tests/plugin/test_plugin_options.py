"""Options and their ini twins, the report header, and the public names."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import pytest_createos
from pytest_createos._bridge import BRIDGED_METHODS
from pytest_createos.provider import CreateosProvider

if TYPE_CHECKING:
    import pytest

    from tests.plugin.conftest import MakeIni


def test_header_names_the_fake_seed_and_policies(inner: pytest.Pytester) -> None:
    """The report header says fake or live, the seed and both check policies."""
    inner.makepyfile("def test_nothing():\n    pass\n")
    result = inner.runpytest("--createos-seed=42", "--createos-unfired-faults=warn")
    result.stdout.fnmatch_lines(
        [
            "createos: fake API (seed 42, transitions immediate, leak check fail, "
            "unfired faults warn)"
        ]
    )


def test_seed_option_seeds_every_test(inner: pytest.Pytester) -> None:
    """``--createos-seed`` is the default seed a marker can still override."""
    inner.makepyfile(
        """
        import pytest

        def test_option(createos_fake):
            assert createos_fake.seed == 42

        @pytest.mark.createos(seed=1)
        def test_marker(createos_fake):
            assert createos_fake.seed == 1
        """
    )
    inner.runpytest("--createos-seed=42").assert_outcomes(passed=2)


def test_option_beats_its_ini_twin(pytester: pytest.Pytester, make_ini: MakeIni) -> None:
    """The ini sets a default; the command line wins over it."""
    make_ini(extra="createos_seed = 5\ncreateos_leak_check = off")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    ini_only = pytester.runpytest()
    ini_only.stdout.fnmatch_lines(["createos: fake API (seed 5, *leak check off*"])
    both = pytester.runpytest("--createos-seed=6", "--createos-leak-check=warn")
    both.stdout.fnmatch_lines(["createos: fake API (seed 6, *leak check warn*"])


def test_bad_option_values_are_usage_errors(inner: pytest.Pytester) -> None:
    """Each bad value names the option, its ini twin and what it accepts."""
    inner.makepyfile("def test_nothing():\n    pass\n")
    cases = {
        "--createos-seed=abc": "--createos-seed (ini createos_seed) must be an integer >= 0; "
        "got 'abc'",
        "--createos-seed=-2": "--createos-seed (ini createos_seed) must be an integer >= 0; "
        "got '-2'",
        "--createos-leak-check=loud": "--createos-leak-check (ini createos_leak_check) must be "
        "one of fail, warn, off; got 'loud'",
        "--createos-unfired-faults=maybe": "--createos-unfired-faults (ini "
        "createos_unfired_faults) must be one of fail, warn, off; got 'maybe'",
    }
    for option, message in cases.items():
        result = inner.runpytest(option)
        assert result.ret == 4
        result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_public_names_are_sorted_and_importable() -> None:
    """``pytest_createos.__all__`` is sorted and every name resolves."""
    names = pytest_createos.__all__
    assert names == sorted(names)
    for name in names:
        assert getattr(pytest_createos, name) is not None


def test_the_provider_errors_are_importable_from_the_plugin() -> None:
    """A test catches the provider's errors with the same one import as the fault actions:
    ``CreateosError`` and every subclass, the very classes the provider raises."""
    from pytest_createos import provider
    from pytest_createos.provider import _errors, _signal

    errors = {
        "CreateosError": _errors.CreateosError,
        "CreateosApiError": _errors.CreateosApiError,
        "CreateosCleanupError": _errors.CreateosCleanupError,
        "ConnectionFailedError": _errors.ConnectionFailedError,
        "OperationTimeout": _signal.OperationTimeout,
        "OperationCancelled": _signal.OperationCancelled,
    }
    for name, cls in errors.items():
        assert getattr(pytest_createos, name) is cls
        assert getattr(provider, name) is cls
        assert name in pytest_createos.__all__
        assert issubclass(cls, _errors.CreateosError)


def test_every_provider_coroutine_is_bridged() -> None:
    """A new coroutine method on the provider must also run on the plugin's loop."""
    coroutines = {
        name
        for name, member in inspect.getmembers(CreateosProvider)
        if not name.startswith("_") and inspect.iscoroutinefunction(member)
    }
    assert coroutines == set(BRIDGED_METHODS)


def test_pytest_asyncio_loop_scope_is_set_only_when_unset(pytester: pytest.Pytester) -> None:
    """pytest-asyncio warns on every run while its fixture loop scope is unset: the plugin sets
    it to ``function`` then, and leaves a project's own choice alone."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    pytester.makeini(
        "[pytest]\naddopts = -p no:cacheprovider -p no:hypothesispytest -p no:benchmark\n"
    )
    unset = pytester.runpytest("-W", "error::pytest.PytestDeprecationWarning")
    unset.assert_outcomes(passed=1)
    unset.stdout.fnmatch_lines(["asyncio: *asyncio_default_fixture_loop_scope=function*"])
    assert 'asyncio_default_fixture_loop_scope" is unset' not in unset.stderr.str()
    pytester.makeini(
        "[pytest]\naddopts = -p no:cacheprovider -p no:hypothesispytest -p no:benchmark\n"
        "asyncio_default_fixture_loop_scope = module\n"
    )
    chosen = pytester.runpytest()
    chosen.assert_outcomes(passed=1)
    chosen.stdout.fnmatch_lines(["asyncio: *asyncio_default_fixture_loop_scope=module*"])
    overridden = pytester.runpytest("-o", "asyncio_default_fixture_loop_scope=session")
    overridden.stdout.fnmatch_lines(["asyncio: *asyncio_default_fixture_loop_scope=session*"])


def test_the_loop_scope_default_reaches_pytest_asyncio_loaded_by_a_conftest(
    pytester: pytest.Pytester,
) -> None:
    """The default is declared once every plugin has declared its settings, so it also holds
    when pytest-asyncio comes from the root conftest rather than from its entry point."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    pytester.makeconftest('pytest_plugins = ["pytest_asyncio.plugin"]\n')
    pytester.makeini(
        "[pytest]\n"
        "addopts = -p no:cacheprovider -p no:hypothesispytest -p no:benchmark -p no:asyncio\n"
    )
    result = pytester.runpytest("-W", "error::pytest.PytestDeprecationWarning")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["asyncio: *asyncio_default_fixture_loop_scope=function*"])
    assert "is unset" not in result.stderr.str()
