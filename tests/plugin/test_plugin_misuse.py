"""Mistakes get a message that says what to do: typos, swapped arguments, stray markers."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import pytest_createos
from fake_server import faults

if TYPE_CHECKING:
    import pytest

    from tests.plugin.conftest import MakeIni


def test_marker_typos_and_swapped_arguments_are_named(inner: pytest.Pytester) -> None:
    """A misspelled operation gets its closest name; an action given first is called swapped."""
    inner.makepyfile(
        """
        import pytest
        from pytest_createos import HttpError

        @pytest.mark.createos_fault("resme_sandbox", HttpError(503))
        def test_typo(createos_fake):
            pass

        @pytest.mark.createos_fault(HttpError(503), "resume_sandbox")
        def test_swapped(createos_fake):
            pass
        """
    )
    result = inner.runpytest()
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-createos marker errors:",
            "*::test_typo: @pytest.mark.createos_fault: unknown operation 'resme_sandbox'; "
            "did you mean 'resume_sandbox'? known: * *",
            "*::test_swapped: @pytest.mark.createos_fault: the arguments are swapped: the "
            "operation name comes first, then the action: createos_fault('resume_sandbox', "
            "HttpError(status=503, retry_after=None, code=None, message=None))",
        ]
    )


def test_a_module_wide_marker_skips_plain_tests_with_a_warning(
    pytester: pytest.Pytester, make_ini: MakeIni
) -> None:
    """``pytestmark`` reaches a plain unit test too: that test runs, the marker is ignored
    there, and one warning names it; the createos tests still get the marker."""
    make_ini(extra="    default::pytest_createos.CreateosWarning")
    pytester.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.createos(seed=7)

        def test_plain_unit():
            assert 1 + 1 == 2

        def test_uses_the_fake(createos_fake):
            assert createos_fake.seed == 7
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*CreateosWarning: createos: a module- or class-wide createos marker reaches 1 "
            "test(s) that use no createos fixture (*::test_plain_unit); it is ignored there"
        ]
    )


def test_a_module_wide_marker_under_filterwarnings_error_is_a_notice(
    inner: pytest.Pytester,
) -> None:
    """With warnings as errors (the inner ini's setting) the run still goes on; the same text
    is a line of the terminal summary."""
    inner.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.createos(seed=7)

        def test_plain_unit():
            pass
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "createos: a module- or class-wide createos marker reaches 1 test(s) that use no "
            "createos fixture (*::test_plain_unit); it is ignored there"
        ]
    )


def test_every_fault_action_is_importable_from_pytest_createos() -> None:
    """``from pytest_createos import HttpError`` works for every concrete action."""
    abstract = {faults.Action, faults.ResponseAction, faults.OutOfBandAction, faults.StreamAction}
    concrete = {
        name
        for name in faults.__all__
        if inspect.isclass(value := getattr(faults, name))
        and issubclass(value, faults.Action)
        and value not in abstract
    }
    assert concrete == set(pytest_createos.FAULT_ACTIONS)
    for name in concrete | {"Fault", "FaultFiring"}:
        assert getattr(pytest_createos, name) is getattr(faults, name)
        assert name in pytest_createos.__all__


def test_wrong_arguments_to_the_sync_helpers_are_named(inner: pytest.Pytester) -> None:
    """``acquire_sync(env=...)`` with no Environment, ``createos_run`` with no coroutine or a
    timeout that is not positive: each is refused at the call, naming the parameter."""
    inner.makepyfile(
        """
        import pytest

        def test_misuse(createos_leases, createos_run, createos_provider, createos_env):
            with pytest.raises(TypeError) as caught:
                createos_leases.acquire_sync(env="notanenv")
            assert str(caught.value) == (
                "createos_leases.acquire_sync(env=...) takes an Environment such as "
                "createos_env; got str"
            )
            with pytest.raises(TypeError) as caught:
                createos_run(42)
            assert str(caught.value) == (
                "createos_run(awaitable) takes a coroutine, e.g. "
                "createos_run(createos_provider.probe(createos_env)); got int"
            )
            for timeout in (-1, 0, float("nan"), True):
                with pytest.raises(ValueError) as caught:
                    createos_run(createos_provider.probe(createos_env), timeout=timeout)
                assert str(caught.value) == (
                    "createos_run(timeout=...) must be a positive number of real seconds or "
                    f"None; got {timeout!r}"
                )
            assert len(createos_leases) == 0
        """
    )
    inner.runpytest().assert_outcomes(passed=1)
