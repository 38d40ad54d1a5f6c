"""Misuse named where it happens: the fake's reason for a setup error, a reset or a close
during a test, a provider coroutine never run, an async test without its marker, a provider
without the clock transport, an exec whose output a background job holds open."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.plugin.conftest import MakeIni

RESET = (
    "createos: the fake was reset during this test (createos_fake.reset() or POST /_fake/reset): "
    "every sandbox made before it, a lease fixture's too, is gone, and so are its faults and "
    "commands; the plugin already resets the fake before each test"
)
CLOSED = (
    "createos: this test closed the fake (createos_fake.close()), so nothing answers at its URL "
    "any more; the plugin owns the fake's lifecycle and starts a new one for the next test "
    "(createos_fake.reset() starts over within a test; FakeCreateOS() is a fake of your own)"
)


def _section(output: str, title: str, end: str) -> list[str]:
    """The report's lines from the one holding ``title`` up to the next holding ``end``."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line)
    stop = next(i for i in range(start + 1, len(lines)) if end in lines[i])
    return lines[start:stop]


def test_a_setup_error_says_the_fake_s_reason_in_a_few_lines(inner: pytest.Pytester) -> None:
    """An unknown shape in the marker: the lease fixture's line, the provider's fixed message
    and the reason from the fake's error envelope, then the journal; not eighty lines of
    pytest, the bridge and the provider."""
    inner.makepyfile(
        """
        import pytest

        @pytest.mark.createos(shape="s-99vcpu-1tb")
        def test_shape(createos_lease):
            pass
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(errors=1)
    error = _section(result.stdout.str(), "ERROR at setup of test_shape", "short test summary")
    assert "pytest_createos/plugin.py:" in error[1]
    assert error[1].endswith(": in createos_lease")
    assert error[2:] == [
        "    return createos_leases.acquire_sync()",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "E   pytest_createos.provider._errors.CreateosApiError: CreateOS request failed "
        "(HTTP 400) during sandbox lifecycle.",
        "E   the fake's reason: POST /v1/sandboxes → 400: shape: unknown shape",
        "------------------------------- createos journal -------------------------------",
        "seed 0, transitions immediate, fake time elapsed 0.000s, 2 events",
        "+0.00s POST /v1/sandboxes → 400",
    ]


def test_a_reset_during_the_test_is_named_beside_the_404(inner: pytest.Pytester) -> None:
    """``createos_fake.reset()`` in the body takes the lease's sandbox with it: the provider's
    404 says so, and why the sandbox is gone."""
    inner.makepyfile(
        """
        def test_reset(createos_provider, createos_env, createos_lease, createos_run,
                       createos_fake):
            createos_fake.reset()
            createos_run(createos_provider.execute(createos_env, createos_lease, "echo", ["hi"]))
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    lines = result.stdout.str().splitlines()
    at = lines.index(
        "E       pytest_createos.provider._errors.CreateosApiError: CreateOS request failed "
        "(HTTP 404) during process creation."
    )
    assert lines[at + 1 : at + 3] == [
        f"E       {RESET}",
        "E       the fake's reason: POST /v1/sandboxes/sb-01KDVDNA00FHJR5RQ6CBVJHD7T/processes "
        "→ 404: sandbox_not_found: sandbox not found",
    ]
    assert "ERROR at teardown" not in result.stdout.str()


def test_a_provider_error_the_test_expects_gets_no_note(inner: pytest.Pytester) -> None:
    """Notes go on a failing test's report only: ``pytest.raises`` sees the fixed message."""
    inner.makepyfile(
        """
        import pytest
        from pytest_createos import CreateosApiError

        def test_expected(createos_provider, createos_env, createos_lease, createos_run,
                          createos_fake):
            createos_fake.reset()
            with pytest.raises(CreateosApiError) as caught:
                createos_run(createos_provider.execute(createos_env, createos_lease, "true"))
            assert str(caught.value) == (
                "CreateOS request failed (HTTP 404) during process creation."
            )
            assert not hasattr(caught.value, "__notes__")
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_closing_the_fake_fails_that_test_and_the_next_gets_a_new_one(
    inner: pytest.Pytester,
) -> None:
    """``createos_fake.close()`` in a test: that test fails with the reason (once, at
    teardown: its lease is not destroyed against a closed fake), and the next test gets a
    working fake, lease and provider."""
    inner.makepyfile(
        """
        def test_close(createos_fake, createos_lease):
            createos_fake.close()

        def test_after(createos_provider, createos_env, createos_lease, createos_run):
            result = createos_run(
                createos_provider.execute(createos_env, createos_lease, "echo", ["hi"])
            )
            assert (result.exit_code, result.stdout) == (0, "hi\\n")
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    error = _section(result.stdout.str(), "ERROR at teardown of test_close", "createos journal")
    assert error[1:] == [CLOSED]


def test_a_call_after_closing_the_fake_names_the_close(inner: pytest.Pytester) -> None:
    """The provider's error after a close (the process's creation is unconfirmed: no answer)
    carries the reason, and the test is reported once."""
    inner.makepyfile(
        """
        def test_close(createos_provider, createos_env, createos_lease, createos_run,
                       createos_fake):
            createos_fake.close()
            createos_run(createos_provider.execute(createos_env, createos_lease, "true"))
        """
    )
    # -rN: without the short summary, which under CI=true repeats the message in full
    result = inner.runpytest("-rN")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       pytest_createos.provider._errors.CreateosCleanupError: CreateOS process "
            "creation could not be confirmed; destroy the lease before reusing it.",
            f"E       {CLOSED}",
        ],
        consecutive=True,
    )
    assert "ERROR at teardown" not in result.stdout.str()
    assert result.stdout.str().count(CLOSED) == 1


NEVER_RUN = (
    "createos: createos_provider.execute(...) was called but never ran: it returns a coroutine, "
    "which did nothing. In a sync test run it with "
    "createos_run(createos_provider.execute(...)); in an async test await it."
)


def _never_run_failure(result: pytest.RunResult, test: str) -> list[str]:
    """The lines of ``test``'s failure, up to the next report's title or the summary."""
    lines = _section(result.stdout.str(), f"_ {test} _", "short test summary")[1:]
    return lines[: next((i for i, line in enumerate(lines) if line.startswith("___")), None)]


def test_a_provider_call_never_run_fails_a_sync_test(
    pytester: pytest.Pytester, make_ini: MakeIni
) -> None:
    """A sync test that calls the provider without ``createos_run`` did nothing: it fails,
    naming the call and the fix, with warnings as errors (the inner ini) and without."""
    pytester.makepyfile(
        """
        def test_forgot(createos_provider, createos_env, createos_lease):
            createos_provider.execute(createos_env, createos_lease, "echo", ["hi"])

        def test_kept_it(createos_provider, createos_env, createos_lease):
            call = createos_provider.execute(createos_env, createos_lease, "echo", ["hi"])
            assert call is not None
        """
    )
    for extra in ("", "    default::RuntimeWarning"):
        make_ini(extra=extra)
        result = pytester.runpytest()
        result.assert_outcomes(failed=2)
        assert _never_run_failure(result, "test_forgot") == [NEVER_RUN]
        assert _never_run_failure(result, "test_kept_it") == [NEVER_RUN]
        assert "never awaited" not in result.stdout.str()


def test_a_lease_never_acquired_and_an_await_forgotten_fail_too(inner: pytest.Pytester) -> None:
    """``createos_leases.acquire()`` from a sync test, and an async test's forgotten
    ``await``, fail the same way; a call run as it should passes."""
    inner.makepyfile(
        """
        import pytest

        def test_sync_acquire(createos_leases):
            createos_leases.acquire()

        @pytest.mark.asyncio
        async def test_forgot_await(createos_provider, createos_env, createos_lease):
            createos_provider.execute(createos_env, createos_lease, "true")

        def test_right(createos_provider, createos_env, createos_lease, createos_run):
            createos_run(createos_provider.execute(createos_env, createos_lease, "true"))
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(failed=2, passed=1)
    assert _never_run_failure(result, "test_sync_acquire") == [
        "createos: createos_leases.acquire(...) was called but never ran: it returns a "
        "coroutine, which did nothing. In a sync test call createos_leases.acquire_sync(...); "
        "in an async test await it."
    ]
    assert _never_run_failure(result, "test_forgot_await") == [NEVER_RUN]


def test_an_async_test_without_a_marker_names_the_marker(inner: pytest.Pytester) -> None:
    """pytest-asyncio is installed (strict mode): the test fails at setup, before any fixture
    runs, naming the marker, instead of pytest's "install a plugin" list."""
    inner.makepyfile(
        """
        async def test_unmarked(createos_provider, createos_env):
            pass
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(errors=1)
    error = _section(result.stdout.str(), "ERROR at setup of test_unmarked", "short test summary")
    assert error[1:] == [
        "async def test_unmarked has no marker, so nothing runs it: add @pytest.mark.asyncio "
        "(pytest-asyncio is installed, in strict mode), or set asyncio_mode = auto in the "
        "pytest configuration"
    ]


def test_an_async_test_without_a_marker_or_pytest_asyncio(pytester: pytest.Pytester) -> None:
    """Without pytest-asyncio the message names the install line and the marker."""
    pytester.makeini(
        "[pytest]\n"
        "addopts = -p no:asyncio -p no:hypothesispytest -p no:benchmark -p no:cacheprovider\n"
    )
    pytester.makepyfile(
        """
        async def test_unmarked(createos_env):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    error = _section(result.stdout.str(), "ERROR at setup of test_unmarked", "short test summary")
    assert error[1:] == [
        "async def test_unmarked has no marker, so nothing runs it: pip install "
        "'pytest-createos[asyncio]' and add @pytest.mark.asyncio"
    ]


def test_a_provider_of_the_test_s_own_without_the_clock_transport_is_warned(
    pytester: pytest.Pytester, make_ini: MakeIni
) -> None:
    """A ``CreateosProvider`` built on ``createos_clock`` without the clock transport gets the
    fake's notice as a ``CreateosWarning`` with the fix; with the transport, and the plugin's
    own providers, get none."""
    make_ini(extra="    default::pytest_createos.CreateosWarning")
    pytester.makepyfile(
        """
        import pytest
        from fake_server import clock_transport
        from pytest_createos.provider import CreateosProvider, Pacer

        async def lifecycle(provider, env):
            lease = await provider.acquire_lease(env)
            await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
            await provider.shutdown()

        @pytest.mark.asyncio
        async def test_without(createos_clock, createos_env):
            await lifecycle(CreateosProvider(clock=createos_clock, pacer=Pacer.disabled()),
                            createos_env)

        @pytest.mark.asyncio
        async def test_with(createos_clock, createos_env):
            transport = clock_transport(createos_clock)
            await lifecycle(CreateosProvider(clock=createos_clock, pacer=Pacer.disabled(),
                                             transport=transport), createos_env)

        @pytest.mark.asyncio
        async def test_plugin_s(createos_provider, createos_env, createos_lease):
            await createos_provider.execute(createos_env, createos_lease, "true")
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*::test_without",
            "*CreateosWarning: createos: a CreateosProvider sent requests to this fake without "
            "fake_server.clock_transport, so the fake's VirtualClock cannot see them on the wire "
            "and the provider's deadlines can fire during a real network delay; build it with "
            "CreateosProvider(clock=clock, transport=fake_server.clock_transport(clock))",
        ]
    )


@pytest.mark.reliability
def test_a_hung_exec_s_failure_says_who_holds_its_output(inner: pytest.Pytester) -> None:
    """``bash -c 'sleep 100 &'`` on the process runtime: the provider's timeout fires (fake
    time follows real time), and the failing test's report names the holder and the fix,
    under the error and in the journal (real programs: reliability)."""
    inner.makepyfile(
        """
        import pytest

        @pytest.mark.createos(runtime="process")
        def test_hangs(createos_provider, createos_env, createos_lease, createos_run):
            result = createos_run(
                createos_provider.execute(
                    createos_env, createos_lease, "bash", ["-c", "echo up; sleep 100 &"],
                    timeout_ms=2000,
                ),
                timeout=30,
            )
            assert result.exit_code == 0
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    held = (
        "bash exited (0) but pid * (sleep 100) still holds its stdout or stderr: the output "
        "does not end, and the reply waits for it; redirect its output (>/dev/null 2>&1) or "
        "use setsid/nohup with >file"
    )
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: assert None == 0",
            "E        +  where None = ExecuteResult(*timed_out=True, stdout='up\\n'*",
            f"E       createos: in sb-01KDVDNA00FHJR5RQ6CBVJHD7T: {held}",
            "",
            "*.py:12: AssertionError",
            "*- createos journal -*",
            "seed 0, *",
            "+*s setup: *",
            "+*s POST /v1/sandboxes/sb-…7T/processes → 201",
            "+*s POST /v1/sandboxes/sb-…7T/processes/proc-…*/stdin/close → 200",
            "+*s GET /v1/sandboxes/sb-…7T/processes/proc-…*/connect → no reply",
            f"+*s sb-…7T {held}",
            "+*s DELETE /v1/sandboxes/sb-…7T/processes/proc-…* → 200",
        ],
        consecutive=True,
    )
