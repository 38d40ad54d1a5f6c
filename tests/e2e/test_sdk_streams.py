"""SDK aliases, stream readers and process I/O methods against the fake via ``createos_sdk``."""

from __future__ import annotations

import time
from typing import Any

import pytest
from createos import CreateSandboxRequest, RunCommandRequest
from createos.errors import OperationTimeout
from createos.models import (
    ExecStreamEventType,
    ManagedProcessCreateRequest,
    ManagedProcessSignal,
    ManagedProcessState,
)


def test_health_aliases(createos_sdk: Any) -> None:
    assert createos_sdk.healthz().up is True
    assert createos_sdk.readyz().ready is True


def test_stream_readers_and_process_io(createos_sdk: Any) -> None:
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    sandbox.files.upload("/tmp/blob", b"abc" * 1000)
    with sandbox.files.download("/tmp/blob") as download:
        assert b"".join(download.iter_bytes(512)) == b"abc" * 1000
    request = RunCommandRequest(command="bash", arguments=["-c", "echo one; exit 3"])
    with sandbox.stream_command(request) as stream:
        first = stream.receive()
        last = stream.recv()  # the alias
    assert (first.type, first.data) == (ExecStreamEventType.STDOUT, "one\n")
    assert (last.type, last.exit_code) == (ExecStreamEventType.EXIT, 3)
    cat = sandbox.processes.create(ManagedProcessCreateRequest(command="cat"))
    assert sandbox.processes.input(cat.process_id, "hi ") > 0
    assert sandbox.processes.input_bytes(cat.process_id, b"there\n") > 0
    sandbox.processes.close_standard_input(cat.process_id)
    done = sandbox.processes.wait(cat.process_id)
    assert done.state == ManagedProcessState.EXITED
    sleeper = sandbox.processes.create(ManagedProcessCreateRequest(command="cat"))
    sandbox.processes.signal(sleeper.process_id, ManagedProcessSignal.KILL)
    assert sandbox.processes.wait(sleeper.process_id).signal == "SIGKILL"
    sandbox.destroy()


def test_wait_for_port_times_out_when_nothing_listens(createos_sdk: Any) -> None:
    """The fake's sandboxes serve no ports yet: the SDK's probe gives up after its timeout."""
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    started = time.monotonic()
    with pytest.raises(OperationTimeout, match="port 8080 did not become ready within 2s"):
        sandbox.wait_for_port(8080, timeout=2)
    assert time.monotonic() - started < 30  # fake seconds, not wall seconds
    sandbox.destroy()
