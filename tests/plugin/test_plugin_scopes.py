"""Beyond one lease per test: the lease factory, module-wide sharing, and trio under anyio."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from tests.plugin.conftest import MakeIni

FACTORY_TESTS = """
import pytest
from pytest_createos._report import LEAKING


@pytest.fixture
def nothing_left(createos_fake):
    yield
    alive = [s.id for s in createos_fake.sandboxes() if s.status in LEAKING]
    assert alive == [], alive


@pytest.mark.asyncio
async def test_many_leases(nothing_left, createos_leases, createos_provider, createos_env):
    first = createos_leases.acquire_sync()
    second = await createos_leases.acquire()
    third = await createos_leases.acquire()
    assert len({first.provider_lease_id, second.provider_lease_id, third.provider_lease_id}) == 3
    await createos_provider.destroy_lease(createos_env, second.provider_lease_id, second.metadata)
    assert len(createos_leases) == 3
"""


def test_the_lease_factory_destroys_what_the_test_left(inner: pytest.Pytester) -> None:
    """Three leases, one destroyed by the test: teardown destroys the other two (a fixture
    torn down after the factory sees nothing alive), with no leak report and no error for the
    one already gone."""
    inner.makepyfile(FACTORY_TESTS)
    inner.runpytest().assert_outcomes(passed=1)


SHARED_TESTS = """
import pytest


@pytest.fixture(scope="module")
def module_lease(createos_shared):
    with createos_shared.leases() as leases:
        yield leases.acquire_sync()


def test_first(createos_shared, module_lease, createos_fake):
    result = createos_shared.run(
        createos_shared.provider.execute(createos_shared.env, module_lease, "touch", ["/tmp/x"])
    )
    assert result.exit_code == 0
    assert createos_fake.sandboxes() == []  # the per-test fake is another one


@pytest.mark.asyncio
async def test_second_sees_the_first(createos_shared, module_lease):
    result = await createos_shared.provider.execute(
        createos_shared.env, module_lease, "ls", ["/tmp/x"]
    )
    assert result.stdout == "/tmp/x\\n"


def test_left_behind(createos_shared):
    createos_shared.run(createos_shared.provider.acquire_lease(createos_shared.env))


def test_runs_last(createos_shared):
    pass
"""


def test_a_module_shares_one_lease_on_the_shared_fake(
    pytester: pytest.Pytester, make_ini: MakeIni
) -> None:
    """State carries across tests on ``createos_shared``, per-test fixtures keep their own
    reset fake, the module's lease is destroyed with the module, and a sandbox left on the
    shared fake is a warning at the end of the session naming the test that made it (not the
    last test, where the warning is raised)."""
    make_ini(extra="    default::pytest_createos.CreateosWarning")
    pytester.makepyfile(SHARED_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=4, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*CreateosWarning: createos_shared: 1 sandbox(es) left running or paused at the end "
            "of the session: sb-* (running, made during "
            "test_a_module_shares_one_lease_on_the_shared_fake.py::test_left_behind)"
        ]
    )


TRIO_TESTS = """
import pytest


@pytest.mark.asyncio
async def test_asyncio_before(createos_provider, createos_env, createos_lease):
    result = await createos_provider.execute(createos_env, createos_lease, "echo", ["a"])
    assert result.stdout == "a\\n"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio", "asyncio"])
async def test_under_anyio(
    anyio_backend, createos_provider, createos_env, createos_lease, createos_leases
):
    result = await createos_provider.execute(createos_env, createos_lease, "echo", ["b"])
    assert result.stdout == "b\\n"
    extra = await createos_leases.acquire()
    await createos_provider.destroy_lease(createos_env, extra.provider_lease_id, extra.metadata)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_cancelled_under_trio(
    anyio_backend, createos_fake, createos_provider, createos_env, createos_lease
):
    import trio

    token = trio.lowlevel.current_trio_token()
    with trio.CancelScope() as scope:

        def log(stream, text):  # called on the plugin's loop once output arrives
            trio.from_thread.run_sync(scope.cancel, trio_token=token)

        await createos_provider.execute(
            createos_env, createos_lease, "sh", ["-c", "echo started; sleep 1000"], log=log
        )
    assert scope.cancelled_caught
    assert createos_fake.clock.now() - createos_fake.journal.origin < 1000  # sleep never ended
"""


def test_trio_under_anyio_before_and_after_asyncio(inner: pytest.Pytester) -> None:
    """The provider and the lease factory work from trio tests, in any order with asyncio
    tests; cancelling a trio test's wait cancels the call on the plugin's loop."""
    inner.makepyfile(TRIO_TESTS)
    inner.runpytest("-p", "anyio").assert_outcomes(passed=4)


def test_a_scoped_fixture_asking_for_a_per_test_one_is_pointed_to_shared(
    inner: pytest.Pytester,
) -> None:
    """pytest's ScopeMismatch gets a line saying what to use instead."""
    inner.makepyfile(
        """
        import pytest

        @pytest.fixture(scope="module")
        def provider(createos_provider):
            return createos_provider

        def test_uses(provider):
            pass
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ScopeMismatch*createos_provider*",
            "*- createos -*",
            "createos: the createos_* fixtures are per test (the fake is reset before each); a "
            "module- or session-scoped fixture takes createos_shared instead: its own fake, env "
            "and provider, never reset; wrap the fixture's yield in `with "
            "createos_shared.leases() as leases:` for leases destroyed when it ends",
        ]
    )
