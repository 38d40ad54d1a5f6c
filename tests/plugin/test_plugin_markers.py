"""The ``createos`` and ``createos_fault`` markers: settings per test, faults armed, misuse."""

from __future__ import annotations

import pytest


def test_createos_marker_settings_reach_the_fake_and_env(inner: pytest.Pytester) -> None:
    """seed, shape, reuse_lease and transitions apply to this test only; closest marker wins."""
    inner.makepyfile(
        """
        import pytest
        from fake_server import TransitionPolicy

        pytestmark = pytest.mark.createos(seed=7, shape="s-2vcpu-4gb")
        KEYS = {}

        def test_module_settings(createos_fake, createos_env):
            KEYS["seed7"] = createos_fake.api_key
            assert createos_fake.seed == 7
            assert createos_env.config["shape"] == "s-2vcpu-4gb"
            assert createos_env.config["reuseLease"] is False
            assert createos_fake.transitions == TransitionPolicy.immediate()

        @pytest.mark.createos(seed=0, reuse_lease=True, transitions="realistic")
        def test_closest_marker_wins(createos_fake, createos_env):
            assert createos_fake.seed == 0
            assert createos_fake.api_key != KEYS["seed7"]
            assert createos_env.config["shape"] == "s-2vcpu-4gb"
            assert createos_env.config["reuseLease"] is True
            assert createos_fake.transitions == TransitionPolicy.realistic()

        @pytest.mark.createos(transitions=TransitionPolicy.after_reads(2))
        def test_policy_object(createos_fake):
            assert createos_fake.transitions == TransitionPolicy.after_reads(2)
            assert createos_fake.api_key == KEYS["seed7"]
        """
    )
    inner.runpytest().assert_outcomes(passed=3)


def test_realistic_transitions_take_fake_time_not_real_time(inner: pytest.Pytester) -> None:
    """Releasing a reusable lease waits for ``pausing`` (2 s) on the virtual clock."""
    inner.makepyfile(
        """
        import time
        import pytest

        @pytest.mark.createos(transitions="realistic", reuse_lease=True)
        def test_pause(
            createos_provider, createos_env, createos_run, createos_clock, createos_fake
        ):
            lease = createos_run(createos_provider.acquire_lease(createos_env))
            start, real = createos_clock.now(), time.perf_counter()
            createos_run(
                createos_provider.release_lease(
                    createos_env, lease.provider_lease_id, lease.metadata
                )
            )
            assert createos_fake.sandbox(lease.provider_lease_id).status == "paused"
            assert createos_clock.now() >= start + 2.0
            assert time.perf_counter() - real < 2.0
            createos_run(
                createos_provider.destroy_lease(
                    createos_env, lease.provider_lease_id, lease.metadata
                )
            )
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_rate_limit_marker_answers_429(inner: pytest.Pytester) -> None:
    """``rate_limit=2`` admits two requests per minute of fake time, then 429 + Retry-After."""
    inner.makepyfile(
        """
        import httpx
        import pytest

        from fake_server import tls_context

        def whoami(fake):
            headers = {"X-Api-Key": fake.api_key}
            return httpx.get(fake.url + "/v1/whoami", headers=headers, verify=tls_context())

        @pytest.mark.createos(rate_limit=2)
        def test_limited(createos_fake):
            assert [whoami(createos_fake).status_code for _ in range(3)] == [200, 200, 429]
            assert int(whoami(createos_fake).headers["Retry-After"]) >= 1

        def test_unlimited_again(createos_fake):
            assert {whoami(createos_fake).status_code for _ in range(5)} == {200}
        """
    )
    inner.runpytest().assert_outcomes(passed=2)


def test_credit_marker_answers_402_and_resets(inner: pytest.Pytester) -> None:
    """``credit=0``: the provider's lease fails with the 402; the next test has credit again."""
    inner.makepyfile(
        good="""
        import pytest
        from pytest_createos.provider import CreateosApiError

        @pytest.mark.createos(credit=0)
        @pytest.mark.asyncio
        async def test_no_credit(createos_fake, createos_provider, createos_env):
            with pytest.raises(CreateosApiError) as caught:
                await createos_provider.acquire_lease(createos_env)
            assert "HTTP 402" in str(caught.value)
            assert createos_fake.sandboxes() == []
            assert createos_fake.credit() == 0

        def test_credit_again(createos_fake):
            assert createos_fake.credit() is None
        """,
        bad="""
        import pytest

        @pytest.mark.createos(credit=-1)
        def test_bad(createos_fake):
            pass
        """,
    )
    inner.runpytest("good.py").assert_outcomes(passed=2)
    result = inner.runpytest("bad.py")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["bad.py::test_bad: createos(credit=...) must be None (unlimited) or a number >= 0"]
    )


def test_fault_marker_arms_a_fault_for_one_test(inner: pytest.Pytester) -> None:
    """``createos_fault`` takes Fault's arguments; the next test starts without it."""
    inner.makepyfile(
        """
        import pytest
        from fake_server.faults import HttpError
        from pytest_createos.provider import CreateosApiError

        @pytest.mark.createos_fault("create_sandbox", HttpError(503), times=2)
        @pytest.mark.asyncio
        async def test_armed(createos_provider, createos_env, createos_fake):
            for _ in range(2):
                with pytest.raises(CreateosApiError) as caught:
                    await createos_provider.acquire_lease(createos_env)
                assert str(caught.value) == (
                    "CreateOS request failed (HTTP 503) during sandbox lifecycle."
                )
            assert len(createos_fake.faults.fired) == 2

        def test_clean(createos_fake):
            assert createos_fake.faults.faults == []
        """
    )
    inner.runpytest().assert_outcomes(passed=2)


@pytest.mark.reliability  # slow: real programs in a pytester run
def test_runtime_marker_runs_real_programs_for_one_test(inner: pytest.Pytester) -> None:
    """``runtime='process'`` gives that test's sandboxes real programs; the next is bashkit."""
    inner.makepyfile(
        test_good="""
        import httpx
        import pytest

        from fake_server import tls_context

        def python_version(fake):
            headers = {"X-Api-Key": fake.api_key}
            with httpx.Client(base_url=fake.url, headers=headers, verify=tls_context()) as c:
                sandbox = c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
                sandbox = sandbox.json()["data"]["id"]
                body = {"cmd": "python3", "args": ["-c", "print('py')"]}
                reply = c.post(f"/v1/sandboxes/{sandbox}/exec", json=body, timeout=30)
                c.delete(f"/v1/sandboxes/{sandbox}")
            return reply.json()["data"]["result"]["exit_code"]

        @pytest.mark.createos(runtime="process")
        def test_real(createos_fake):
            assert createos_fake.runtime == "process"
            assert python_version(createos_fake) == 0

        def test_bashkit_again(createos_fake):
            assert python_version(createos_fake) == 127
        """,
        test_bad="""
        import pytest

        @pytest.mark.createos(runtime="vm")
        def test_bad(createos_fake):
            pass
        """,
    )
    inner.runpytest("test_good.py").assert_outcomes(passed=2)
    bad = inner.runpytest("test_bad.py")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["*::test_bad: createos(runtime=...) must be 'bashkit' or 'process'"])


def test_process_runtime_where_bubblewrap_cannot_run_is_one_short_failure(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reason and what to do, as the whole report: none of the plugin's frames."""
    from fake_server.runtime.process.containment import bwrap

    monkeypatch.setattr(bwrap, "bwrap_path", lambda: "/nonexistent/bwrap")
    inner.makepyfile(
        """
        import pytest

        @pytest.mark.createos(runtime="process")
        def test_real(createos_lease):
            pass
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(errors=1)
    report = result.stdout.str()
    errors = report[report.index("= ERRORS =") : report.index("short test summary info")]
    assert errors.splitlines()[1:-1] == [
        "_________________________ ERROR at setup of test_real __________________________",
        "@pytest.mark.createos(runtime='process'): the process runtime cannot run here: bwrap "
        f"cannot start: No such file or directory. {bwrap.HELP}",
    ]


def test_egress_hostnames_marker_enforces_names_for_one_test(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_good="""
        import pytest

        def curl(fake, rules):
            from fake_server.runtime.bashkit.machine import BashkitMachine

            machine = fake.runtimes.get("bashkit").new_sandbox("x")
            assert isinstance(machine, BashkitMachine)
            machine.set_egress(rules, lambda: None)
            return machine._egress_rules()

        @pytest.mark.createos(egress_hostnames="enforce")
        def test_strict(createos_fake):
            assert createos_fake.egress_hostnames == "enforce"
            assert curl(createos_fake, ["pypi.org"]) == ["pypi.org"]

        def test_service_default_again(createos_fake):
            assert createos_fake.egress_hostnames == "ignore"
            assert curl(createos_fake, ["pypi.org"]) == []
        """,
        test_bad="""
        import pytest

        @pytest.mark.createos(egress_hostnames="strict")
        def test_bad(createos_fake):
            pass
        """,
    )
    inner.runpytest("test_good.py").assert_outcomes(passed=2)
    bad = inner.runpytest("test_bad.py")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(
        ["*::test_bad: createos(egress_hostnames=...) must be 'ignore' or 'enforce'"]
    )


def test_marker_mistakes_are_one_usage_error(inner: pytest.Pytester) -> None:
    """Unknown arguments and bad values stop the run before any test, each one named."""
    inner.makepyfile(
        """
        import pytest
        from fake_server.faults import HttpError

        @pytest.mark.createos(sede=1)
        def test_typo():
            pass

        @pytest.mark.createos("immediate")
        def test_positional():
            pass

        @pytest.mark.createos(transitions="slow", seed="1")
        def test_values():
            pass

        @pytest.mark.createos(seed=-5)
        def test_negative_seed():
            pass

        @pytest.mark.createos_fault("nope", HttpError(503))
        def test_fault():
            pass

        @pytest.mark.createos_fault("get_sandbox", HttpError(503), when_ever=1)
        def test_fault_kwarg():
            pass
        """
    )
    result = inner.runpytest()
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-createos marker errors:",
            "test_marker_mistakes_are_one_usage_error.py::test_typo: @pytest.mark.createos got "
            "unknown argument(s) sede; allowed: seed, transitions, reuse_lease, shape, rate_limit, "
            "leak_check, runtime, egress_hostnames, credit",
            "test_marker_mistakes_are_one_usage_error.py::test_positional: "
            "@pytest.mark.createos takes keyword arguments only",
            "test_marker_mistakes_are_one_usage_error.py::test_values: "
            "createos(seed=...) must be an integer >= 0; got '1'",
            "test_marker_mistakes_are_one_usage_error.py::test_negative_seed: "
            "createos(seed=...) must be an integer >= 0; got -5",
            "test_marker_mistakes_are_one_usage_error.py::test_fault: "
            "@pytest.mark.createos_fault: unknown operation 'nope'; known: * create_process *",
            "test_marker_mistakes_are_one_usage_error.py::test_fault_kwarg: "
            "@pytest.mark.createos_fault: *unexpected keyword argument 'when_ever'",
        ]
    )


def test_a_marker_without_a_createos_fixture_is_a_usage_error(inner: pytest.Pytester) -> None:
    """A fault armed on a test that never starts the fake would silently do nothing."""
    inner.makepyfile(
        """
        import pytest
        from fake_server.faults import HttpError

        @pytest.mark.createos_fault("get_sandbox", HttpError(503))
        def test_forgot_the_fixture():
            pass
        """
    )
    result = inner.runpytest()
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "*::test_forgot_the_fixture: @pytest.mark.createos_fault configures the fake, but "
            "the test uses no createos fixture (createos_fake, createos_env, createos_provider, "
            "createos_lease, createos_leases, createos_sdk, createos_clock)"
        ]
    )


def test_marker_faults_are_armed_after_fixture_setup(inner: pytest.Pytester) -> None:
    """The lease's own ``exec`` at acquire is not hit; the test body's first ``exec`` is."""
    inner.makepyfile(
        """
        import pytest
        from fake_server.faults import HttpError
        from pytest_createos.provider import CreateosApiError

        @pytest.mark.createos_fault("exec", HttpError(503))
        @pytest.mark.asyncio
        async def test_resume_hits_the_fault(createos_provider, createos_env, createos_lease):
            with pytest.raises(CreateosApiError) as caught:
                await createos_provider.resume_lease(
                    createos_env, createos_lease.provider_lease_id, createos_lease.metadata
                )
            assert str(caught.value) == (
                "CreateOS request failed (HTTP 503) during workspace command."
            )
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_a_program_bashkit_lacks_says_how_to_run_it(inner: pytest.Pytester) -> None:
    """Under the fixtures the default runtime is bashkit: a real program's 127 names the
    marker that runs it."""
    inner.makepyfile(
        """
        def test_python(createos_provider, createos_env, createos_lease, createos_run):
            result = createos_run(
                createos_provider.execute(createos_env, createos_lease, "python3", ["-V"])
            )
            assert result.exit_code == 127
            assert result.stderr == (
                "env: 'python3': No such file or directory (the bashkit runtime has no python3; "
                'run real programs with the process runtime: '
                '@pytest.mark.createos(runtime="process"))\\n'
            )
        """
    )
    inner.runpytest().assert_outcomes(passed=1)
