"""The sync reproduction, 200 times beside two CPU-burning processes, with no hold.

A sync test that does 50 ms of its own work between starting ``sleep 300`` and signalling it
used to find the process exited (fake time jumped 300 s) in up to 12 of 20 runs under this
load. Its thread attends the clock now, so none may.
"""

from __future__ import annotations

import time

import pytest
from createos import CreateSandboxRequest
from createos.models import ManagedProcessCreateRequest, ManagedProcessSignal

pytestmark = [pytest.mark.reliability, pytest.mark.usefixtures("cpu_burners")]

SLEEPER = ManagedProcessCreateRequest(command="/bin/bash", arguments=["-c", "sleep 300"])


def _own_work(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(100))


@pytest.mark.parametrize("round_", range(200))
def test_fifty_ms_of_own_work_never_ends_a_sleep_300(createos_sdk, createos_clock, round_):
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    process_id = sandbox.processes.create(SLEEPER).process_id
    _own_work(0.05)
    assert sandbox.processes.get(process_id).state == "running"
    sandbox.processes.signal(process_id, ManagedProcessSignal.TERMINATE)
    assert sandbox.processes.get(process_id).signal == "SIGTERM"
    sandbox.destroy()
