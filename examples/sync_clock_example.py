"""A sync test's own code between two SDK calls moves no fake time: no hold needed."""

import time

from createos import CreateSandboxRequest
from createos.models import ManagedProcessCreateRequest, ManagedProcessSignal


def test_a_sleeping_process_waits_for_the_signal(createos_sdk, createos_clock):
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    sleeper = ManagedProcessCreateRequest(command="/bin/bash", arguments=["-c", "sleep 300"])
    process_id = sandbox.processes.create(sleeper).process_id
    before = createos_clock.now()
    time.sleep(0.05)  # the test's own work, or a pause of a loaded machine
    assert createos_clock.now() == before  # the sleep 300 in the sandbox is still running
    sandbox.processes.signal(process_id, ManagedProcessSignal.TERMINATE)
    assert sandbox.processes.get(process_id).signal == "SIGTERM"
    sandbox.destroy()
