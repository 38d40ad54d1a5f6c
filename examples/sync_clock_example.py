"""A sync test keeps fake time still while its own code runs between two SDK calls."""

import time

from createos import CreateSandboxRequest
from createos.models import ManagedProcessCreateRequest, ManagedProcessSignal


def test_a_sleeping_process_waits_for_the_signal(createos_sdk, createos_clock):
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    sleeper = ManagedProcessCreateRequest(command="/bin/bash", arguments=["-c", "sleep 300"])
    with createos_clock.hold():
        process_id = sandbox.processes.create(sleeper).process_id
        time.sleep(0.05)  # the test's own work, or a pause of a loaded machine
        sandbox.processes.signal(process_id, ManagedProcessSignal.TERMINATE)
    assert sandbox.processes.get(process_id).signal == "SIGTERM"
    sandbox.destroy()
