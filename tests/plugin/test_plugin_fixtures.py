"""The fixtures from a user's point of view: sync and async styles, reset, teardown."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from tests.plugin.conftest import MakeIni

SYNC_AND_ASYNC = """
import pytest

def test_sync(createos_provider, createos_env, createos_lease, createos_run):
    result = createos_run(
        createos_provider.execute(createos_env, createos_lease, "echo", ["sync"])
    )
    assert (result.exit_code, result.stdout) == (0, "sync\\n")

@pytest.mark.asyncio
async def test_asyncio(createos_provider, createos_env, createos_lease):
    result = await createos_provider.execute(createos_env, createos_lease, "echo", ["async"])
    assert (result.exit_code, result.stdout) == (0, "async\\n")

@pytest.mark.asyncio
async def test_asyncio_acquire_and_destroy(createos_provider, createos_env, createos_fake):
    lease = await createos_provider.acquire_lease(createos_env)
    assert createos_fake.sandbox(lease.provider_lease_id).status == "running"
    await createos_provider.destroy_lease(createos_env, lease.provider_lease_id, lease.metadata)
"""


def test_sync_and_pytest_asyncio_strict_tests_use_the_same_fixtures(
    inner: pytest.Pytester,
) -> None:
    """A sync test (through createos_run) and strict-mode asyncio tests all pass."""
    inner.makepyfile(SYNC_AND_ASYNC)
    inner.runpytest().assert_outcomes(passed=3)


def test_pytest_asyncio_auto_mode_needs_no_marker(
    pytester: pytest.Pytester, make_ini: MakeIni
) -> None:
    """In auto mode an unmarked ``async def`` test awaits the provider directly."""
    make_ini(mode="auto")
    pytester.makepyfile(
        """
        async def test_auto(createos_provider, createos_env, createos_lease):
            result = await createos_provider.execute(createos_env, createos_lease, "pwd")
            assert result.stdout == "/\\n" or result.exit_code == 0
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_anyio_tests_use_the_provider(inner: pytest.Pytester) -> None:
    """anyio's pytest plugin (asyncio backend) runs the same fixtures."""
    inner.makepyfile(
        """
        import pytest

        @pytest.fixture
        def anyio_backend():
            return "asyncio"

        @pytest.mark.anyio
        async def test_anyio(createos_provider, createos_env, createos_lease):
            result = await createos_provider.execute(
                createos_env, createos_lease, "printf", ["anyio"]
            )
            assert result.stdout == "anyio"
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_each_test_gets_a_reset_fake(inner: pytest.Pytester) -> None:
    """Sandboxes, journal and faults of one test are gone in the next; the key is seeded."""
    inner.makepyfile(
        """
        import httpx

        KEYS = []

        def test_first(createos_fake):
            KEYS.append(createos_fake.api_key)
            response = httpx.post(
                createos_fake.url + "/v1/sandboxes",
                json={"shape": "s-1vcpu-1gb"},
                headers={"X-Api-Key": createos_fake.api_key},
            )
            assert response.status_code in (200, 201)
            sandbox_id = response.json()["data"]["id"]
            httpx.delete(
                createos_fake.url + "/v1/sandboxes/" + sandbox_id,
                headers={"X-Api-Key": createos_fake.api_key},
            )

        def test_second(createos_fake):
            assert createos_fake.sandboxes() == []
            assert createos_fake.journal.events == []
            assert createos_fake.faults.faults == []
            assert KEYS == [createos_fake.api_key]
        """
    )
    inner.runpytest().assert_outcomes(passed=2)


def test_lease_is_destroyed_at_teardown(inner: pytest.Pytester) -> None:
    """``createos_lease`` is running during the test and destroyed before the fake's checks."""
    inner.makepyfile(
        """
        import pytest

        @pytest.fixture
        def seen(createos_fake):
            found = {}
            yield found
            assert createos_fake.sandbox(found["id"]).status in ("destroying", "destroyed")

        def test_lease(seen, createos_lease, createos_fake, createos_env):
            seen["id"] = createos_lease.provider_lease_id
            assert createos_fake.sandbox(seen["id"]).status == "running"
            assert createos_lease.metadata["environmentId"] == createos_env.environment_id
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_env_points_at_the_fake(inner: pytest.Pytester) -> None:
    """The environment config carries the fake's URL and key and the default shape."""
    inner.makepyfile(
        """
        def test_env(createos_env, createos_fake):
            assert createos_env.company_id == "pytest-createos"
            assert createos_env.environment_id == "pytest-createos-env"
            assert dict(createos_env.config) == {
                "apiUrl": createos_fake.url,
                "apiKey": createos_fake.api_key,
                "shape": "s-1vcpu-1gb",
                "reuseLease": False,
            }
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_clock_is_the_fakes_virtual_clock(inner: pytest.Pytester) -> None:
    """``createos_clock`` is the clock the fake and the provider share; advance() moves it."""
    inner.makepyfile(
        """
        from fake_server import VirtualClock

        def test_clock(createos_clock, createos_fake):
            assert isinstance(createos_clock, VirtualClock)
            assert createos_fake.clock is createos_clock
            before = createos_clock.now()
            createos_clock.advance(90)
            assert createos_clock.now() == before + 90
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_sdk_client_talks_to_the_fake(inner: pytest.Pytester) -> None:
    """The official SDK client creates and destroys a sandbox on the fake."""
    inner.makepyfile(
        """
        import createos

        def test_sdk(createos_sdk, createos_fake):
            assert isinstance(createos_sdk, createos.Client)
            request = createos.CreateSandboxRequest(shape="s-1vcpu-1gb")
            sandbox = createos_sdk.create_sandbox(request)
            assert createos_fake.sandbox(sandbox.id).shape.id == "s-1vcpu-1gb"
            sandbox.destroy()
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_sdk_fixture_fails_without_the_sdk(inner: pytest.Pytester) -> None:
    """Without ``createos-sandbox`` installed a test asking for the SDK fixture fails (a skip
    would hide it) with one line naming the extra that installs it."""
    inner.makeconftest(
        """
        import sys
        sys.modules["createos"] = None
        """
    )
    inner.makepyfile("def test_sdk(createos_sdk):\n    pass\n")
    result = inner.runpytest()
    result.assert_outcomes(errors=1)
    report = result.stdout.str()
    errors = report[report.index("= ERRORS =") : report.index("short test summary info")]
    assert errors.splitlines()[1:-1] == [
        "__________________________ ERROR at setup of test_sdk __________________________",
        "createos_sdk needs the official CreateOS Python SDK (the createos-sandbox package): "
        "pip install 'pytest-createos[sdk]'",
    ]


def test_createos_run_refuses_its_own_loop(inner: pytest.Pytester) -> None:
    """Calling ``createos_run`` from a coroutine it runs is a clear error, not a deadlock."""
    inner.makepyfile(
        """
        import pytest

        def test_nested(createos_run):
            async def outer():
                createos_run(asyncio_sleep())
            async def asyncio_sleep():
                return None
            with pytest.raises(RuntimeError) as caught:
                createos_run(outer())
            assert str(caught.value) == (
                "createos_run cannot be used inside a coroutine it runs; await it instead"
            )
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_an_async_test_without_pytest_asyncio_names_the_extra(pytester: pytest.Pytester) -> None:
    """Without pytest-asyncio, an async test of ours fails at setup with the install line,
    not with pytest's "async def functions are not natively supported" and an unknown mark."""
    pytester.makeini(
        "[pytest]\n"
        "addopts = -p no:asyncio -p no:hypothesispytest -p no:benchmark -p no:cacheprovider\n"
        "filterwarnings =\n    error\n"
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.asyncio
        async def test_async(createos_env):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    report = result.stdout.str()
    errors = report[report.index("= ERRORS =") : report.index("short test summary info")]
    assert errors.splitlines()[1:-1] == [
        "_________________________ ERROR at setup of test_async _________________________",
        "@pytest.mark.asyncio needs pytest-asyncio, which is not installed: "
        "pip install 'pytest-createos[asyncio]'",
    ]
