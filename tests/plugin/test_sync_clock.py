"""A sync test's own code between two calls never lets fake time move, with no hold.

The official SDK is synchronous: between two of its calls the test's thread runs code the
clock's loop watch cannot see. The thread attends the clock for the whole test and counts as
waiting only while it is blocked in a request through the fixture's transport, in
``createos_run`` or in a lease fixture.
"""

from __future__ import annotations

import time

import pytest

createos = pytest.importorskip("createos")

from createos import CreateSandboxRequest  # noqa: E402
from createos.models import ManagedProcessCreateRequest, ManagedProcessSignal  # noqa: E402

SLEEPER = ManagedProcessCreateRequest(command="/bin/bash", arguments=["-c", "sleep 300"])


def _own_work(seconds: float) -> None:
    """Python code running (not blocked): what a test does between two calls."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(100))


def test_a_sync_tests_own_work_between_calls_moves_no_fake_time(createos_sdk, createos_clock):
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    process_id = sandbox.processes.create(SLEEPER).process_id
    before = createos_clock.now()
    _own_work(0.05)
    time.sleep(0.05)  # a short real pause of the test's own stands still too
    assert createos_clock.now() == before
    assert sandbox.processes.get(process_id).state == "running"
    sandbox.processes.signal(process_id, ManagedProcessSignal.TERMINATE)
    assert sandbox.processes.get(process_id).signal == "SIGTERM"
    sandbox.destroy()


def test_fake_time_still_moves_while_the_sync_test_waits_on_the_fake(createos_sdk):
    """Waiting on a request is waiting: a 300 s sleep ends while the SDK waits for it."""
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    result = sandbox.shell("sleep 300; echo done").result
    assert (result.exit_code, result.standard_output) == (0, "done\n")
    sandbox.destroy()
