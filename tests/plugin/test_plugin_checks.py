"""Teardown checks and reports: leaks, unfired faults, fake errors, the journal section."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from tests.plugin.conftest import MakeIni

LEAKING_TEST = """
import pytest

@pytest.mark.asyncio
async def test_leaks(createos_provider, createos_env):
    await createos_provider.acquire_lease(createos_env)
"""

UNFIRED_TEST = """
import pytest
from fake_server.faults import HttpError

@pytest.mark.createos_fault("resume_sandbox", HttpError(503))
def test_never_resumes(createos_fake):
    pass
"""


def test_a_leaked_sandbox_fails_the_test_at_teardown_naming_it(inner: pytest.Pytester) -> None:
    """A sandbox left running is an error at teardown with its id and status."""
    inner.makepyfile(LEAKING_TEST)
    result = inner.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaks*",
            "createos: 1 sandbox(es) left running or paused: sb-* (running). Destroy them "
            "(SDK: sandbox.destroy(); provider: provider.destroy_lease(env, lease_id, metadata)) "
            "or lease them with the createos_lease or createos_leases fixture; "
            "@pytest.mark.createos(leak_check='warn'|'off') or --createos-leak-check=warn|off "
            "relaxes this check.",
        ]
    )


def test_leak_check_warn_and_off(pytester: pytest.Pytester, make_ini: MakeIni) -> None:
    """``warn`` reports a CreateosWarning and passes; ``off`` says nothing."""
    make_ini(extra="    default::pytest_createos.CreateosWarning")
    pytester.makepyfile(LEAKING_TEST)
    warned = pytester.runpytest("--createos-leak-check=warn")
    warned.assert_outcomes(passed=1, warnings=1)
    warned.stdout.fnmatch_lines(["*CreateosWarning: createos: 1 sandbox(es) left running*"])
    silent = pytester.runpytest("--createos-leak-check=off")
    silent.assert_outcomes(passed=1)


def test_an_unfired_fault_fails_the_test(inner: pytest.Pytester) -> None:
    """A fault armed by a marker that never fires is an error naming the fault."""
    inner.makepyfile(UNFIRED_TEST)
    result = inner.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "createos: 1 armed fault(s) never fired: Fault(resume_sandbox HttpError(status=503*"
            "times=1). --createos-unfired-faults=warn|off relaxes this check."
        ]
    )


def test_unfired_fault_check_can_be_turned_off_in_the_ini(
    pytester: pytest.Pytester, make_ini: MakeIni
) -> None:
    """The ini twin ``createos_unfired_faults = off`` silences the check."""
    make_ini(extra="createos_unfired_faults = off")
    pytester.makepyfile(UNFIRED_TEST)
    pytester.runpytest().assert_outcomes(passed=1)


def test_fake_internal_errors_fail_the_test_with_the_traceback(inner: pytest.Pytester) -> None:
    """An exception inside the fake (here: a fault predicate that breaks) fails the test at
    teardown with the fake's traceback, even though the test itself passed."""
    inner.makepyfile(
        """
        import httpx
        import pytest
        from fake_server.faults import HttpError

        def broken(call):
            return 1 / 0

        @pytest.mark.createos_fault("whoami", HttpError(503), when=broken)
        def test_fake_breaks(createos_fake):
            response = httpx.get(
                createos_fake.url + "/v1/whoami", headers={"X-Api-Key": createos_fake.api_key}
            )
            assert response.status_code == 500
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "createos: the fake failed internally during this test (1 error(s))",
            "--- in whoami ---",
            "Traceback (most recent call last):",
            "*return 1 / 0*",
            "ZeroDivisionError: division by zero",
        ]
    )


def test_a_failing_test_shows_the_fakes_journal(inner: pytest.Pytester) -> None:
    """The journal section lists this test's calls, faults and statuses, with fake times
    from its start, and never the key; ``full`` lists every event with full ids."""
    inner.makepyfile(
        """
        import pytest
        from fake_server.faults import HttpError

        @pytest.mark.createos_fault("get_sandbox", HttpError(503))
        @pytest.mark.asyncio
        async def test_fails(createos_provider, createos_env, createos_lease):
            await createos_provider.resume_lease(
                createos_env, createos_lease.provider_lease_id, createos_lease.metadata
            )
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- createos journal -*",
            "seed 0, transitions immediate, fake time elapsed *s, * events",
            "+0.00s setup: 4 calls (sb-…?? creating → running)",
            "+0.00s GET /v1/sandboxes/sb-…?? → 503 (fault #1 HttpError 503)",
            "=*short test summary*",
        ]
    )
    assert "cos_live_" not in result.stdout.str()  # the fake's seeded key
    full = inner.runpytest("--createos-journal=full")
    full.stdout.fnmatch_lines(
        [
            "*- createos journal -*",
            "seed 0, transitions immediate, fake time elapsed *s, * events",
            "     0.000s request    create_sandbox POST /v1/sandboxes",
            "*upload_file PUT /v1/sandboxes/sb-*/files -> 200*",
            "*fault      get_sandbox GET /v1/sandboxes/sb-* fault#1 HttpError(status=503*",
            "*response   get_sandbox GET /v1/sandboxes/sb-* -> 503*",
        ]
    )
    assert "cos_live_" not in full.stdout.str()


def test_a_passing_test_prints_no_journal(inner: pytest.Pytester) -> None:
    """Only failures get the section, so passing runs stay quiet."""
    inner.makepyfile("def test_ok(createos_lease):\n    pass\n")
    result = inner.runpytest("-rA")
    result.assert_outcomes(passed=1)
    assert "createos journal" not in result.stdout.str()


def test_a_stream_fault_past_the_end_of_the_stream_counts_as_unfired(
    inner: pytest.Pytester,
) -> None:
    """A cut whose trigger lies past the last frame never acted: the check reports it."""
    inner.makepyfile(
        """
        import httpx
        import pytest
        from fake_server.faults import CutStream

        @pytest.mark.createos_fault("exec_stream", CutStream(after_frames=1))
        def test_one_frame(createos_fake):
            headers = {"X-Api-Key": createos_fake.api_key}
            with httpx.Client(base_url=createos_fake.url, headers=headers) as client:
                sid = client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()
                sid = sid["data"]["id"]
                done = client.post(f"/v1/sandboxes/{sid}/exec?stream=true", json={"cmd": "true"})
                assert done.text == '{"exit_code":0}\\n'
                client.delete(f"/v1/sandboxes/{sid}")
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["createos: 1 armed fault(s) never fired: Fault(exec_stream CutStream(*"]
    )
