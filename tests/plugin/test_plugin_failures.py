"""What a failing test prints: the trimmed traceback, the short journal, and each problem once."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from tests.plugin.conftest import MakeIni

DEMO = pathlib.Path(__file__).resolve().parents[2] / "examples" / "failing_resume_demo.py"


def _failure(output: str) -> list[str]:
    """The failure's own lines: from its title to the end of the journal section."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "test_resume_after_pause __" in line)
    end = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    return lines[start:end]


def test_the_tutorials_failing_example_reports_in_under_25_lines(inner: pytest.Pytester) -> None:
    """The provider's 503 ends the traceback at the test's line (no plugin, provider or
    asyncio frames), the journal is one line per call with the polls collapsed and the fixture
    setup summarised, and the lease the fixture will destroy is no leak."""
    inner.makepyfile(test_demo=DEMO.read_text())
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    failure = _failure(result.stdout.str())
    assert len(failure) < 25, "\n".join(failure)
    result.stdout.fnmatch_lines(
        [
            "*test_resume_after_pause __*",
            "",
            "createos_provider = <pytest_createos._bridge.BridgedProvider object at *>",
            "createos_env = Environment(*'apiKey': '<redacted>'*",
            "createos_lease = Lease(provider_lease_id='sb-01KDVDNA00FHJR5RQ6CBVJHD7T'*",
            "",
            '    @pytest.mark.createos(transitions="realistic", reuse_lease=True)',
            "*",
            "*",
            "    async def test_resume_after_pause(createos_provider, createos_env, "
            "createos_lease):",
            "*",
            "*",
            ">       resumed = await createos_provider.resume_lease("
            "createos_env, lease_id, metadata)",
            "*^^^^*",
            "E       pytest_createos.provider._errors.CreateosApiError: CreateOS request failed "
            "(HTTP 503) during sandbox lifecycle.",
            "",
            "test_demo.py:18: CreateosApiError",
            "*- createos journal -*",
            "seed 0, transitions realistic, fake time elapsed 2.050s, 39 events",
            "+0.00s setup: 4 calls (sb-…7T creating → running)",
            "+0.05s GET /v1/sandboxes/sb-…7T → 200",
            "+0.05s POST /v1/sandboxes/sb-…7T/pause → 200 (running → pausing)",
            "+0.30s GET /v1/sandboxes/sb-…7T ×10 → 200 (pausing → paused)",
            "+2.05s POST /v1/sandboxes/sb-…7T/resume → 503 (fault #1 HttpError 503)",
            "=*short test summary info*",
        ],
        consecutive=True,
    )
    assert "_client.py" not in result.stdout.str()
    assert "_bridge.py" not in result.stdout.str()


def test_full_journal_keeps_every_frame_and_event(inner: pytest.Pytester) -> None:
    """``--createos-journal=full`` is the escape hatch: provider frames and raw events."""
    inner.makepyfile(test_demo=DEMO.read_text())
    result = inner.runpytest("--createos-journal=full")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pytest_createos/provider/_client.py:*: CreateosApiError"])
    result.stdout.fnmatch_lines(
        [
            "*request    resume_sandbox POST /v1/sandboxes/sb-01KD*/resume*",
            "*response   resume_sandbox POST /v1/sandboxes/sb-01KD*/resume -> 503*",
            '*body  {"status": "error", "code": 503, "message": "service unavailable"*',
        ]
    )


def test_journal_ini_twin_and_bad_value(pytester: pytest.Pytester, make_ini: MakeIni) -> None:
    """``createos_journal = off`` in the ini drops the section; a bad value stops the run."""
    make_ini(extra="createos_journal = off")
    pytester.makepyfile(test_demo=DEMO.read_text())
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert "createos journal" not in result.stdout.str()
    bad = pytester.runpytest("--createos-journal=long")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(
        [
            "ERROR: --createos-journal (ini createos_journal) must be one of short, full, off; "
            "got 'long'"
        ]
    )


ONE_REPORT_EACH = """
import pytest

async def test_forgot_the_marker(createos_provider, createos_env, createos_lease):
    await createos_provider.execute(createos_env, createos_lease, "true")

@pytest.mark.asyncio
async def test_leaks_and_fails(createos_provider, createos_env):
    await createos_provider.acquire_lease(createos_env)
    assert False, "the test's own failure"

@pytest.mark.createos(leak_check="off")
@pytest.mark.asyncio
async def test_may_leak(createos_provider, createos_env):
    await createos_provider.acquire_lease(createos_env)
"""


def test_each_failure_is_reported_once_and_only_with_the_fake_s_part(
    inner: pytest.Pytester,
) -> None:
    """An async test without its asyncio marker fails at setup, before any call, naming the
    marker, so it gets no journal; a failing test that also leaks names the leak in its
    journal, not in a second error at teardown; ``createos(leak_check='off')`` lets one test
    leave a sandbox."""
    inner.makepyfile(ONE_REPORT_EACH)
    result = inner.runpytest()
    result.assert_outcomes(errors=1, failed=1, passed=1)
    out = result.stdout.str()
    forgot = out.split("ERROR at setup of test_forgot_the_marker __", 1)[1].split(" FAILURES ")[0]
    assert forgot.splitlines()[1] == (
        "async def test_forgot_the_marker has no marker, so nothing runs it: add "
        "@pytest.mark.asyncio (pytest-asyncio is installed, in strict mode), or set "
        "asyncio_mode = auto in the pytest configuration"
    )
    assert "createos journal" not in forgot
    result.stdout.fnmatch_lines(
        [
            "*- createos journal -*",
            "seed 0, *",
            "+0.00s POST /v1/sandboxes → 200 (sb-…7T creating → running)",
            "*",
            "*",
            "*",
            "also: createos: 1 sandbox(es) left running or paused: "
            "sb-01KDVDNA00FHJR5RQ6CBVJHD7T (running). Destroy them*",
        ]
    )
    assert "ERROR at teardown" not in out


def test_a_bad_leak_check_marker_is_named(inner: pytest.Pytester) -> None:
    """``createos(leak_check=...)`` takes the option's three values."""
    inner.makepyfile(
        """
        import pytest

        @pytest.mark.createos(leak_check="never")
        def test_bad(createos_fake):
            pass
        """
    )
    result = inner.runpytest()
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["*::test_bad: createos(leak_check=...) must be 'fail', 'warn' or 'off'"]
    )


def test_the_tutorial_shows_the_report_as_printed() -> None:
    """The tutorial's copy of the report keeps the journal lines the test above checks."""
    tutorial = (DEMO.parents[1] / "docs" / "tutorial.md").read_text()
    for line in (
        "seed 0, transitions realistic, fake time elapsed 2.050s, 39 events",
        "+0.00s setup: 4 calls (sb-…7T creating → running)",
        "+0.30s GET /v1/sandboxes/sb-…7T ×10 → 200 (pausing → paused)",
        "+2.05s POST /v1/sandboxes/sb-…7T/resume → 503 (fault #1 HttpError 503)",
        "E       pytest_createos.provider._errors.CreateosApiError: CreateOS request failed "
        "(HTTP 503) during sandbox lifecycle.",
    ):
        assert line in tutorial
