"""The official SDK's PTY example against the fake: ``pty`` only, input lines, live output."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from createos import Client
from createos.models import (
    CreateSandboxRequest,
    ManagedProcessConnectEventType,
    ManagedProcessCreateRequest,
    PTYSize,
)

from fake_server import FakeCreateOS, TransitionPolicy

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(name="fake")
def _fake() -> Iterator[FakeCreateOS]:
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate()).start()
    yield fake
    fake.close()
    assert fake.errors == []


def test_sdk_pty_runs_an_interactive_shell(fake: FakeCreateOS) -> None:
    with Client(fake.api_key, base_url=fake.url) as client:
        sandbox = client.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
        sandbox.wait_until_running()
        pty = sandbox.processes.create(ManagedProcessCreateRequest(pty=PTYSize(rows=24, cols=80)))
        assert (pty.kind, pty.command) == ("pty", "/bin/bash")
        with sandbox.processes.connect(pty.process_id) as frames:
            sandbox.processes.input(pty.process_id, "echo hi\n")
            # Heartbeats may come first when the fake clock jumps while the machine is slow.
            first = next(f for f in frames if f.type != ManagedProcessConnectEventType.HEARTBEAT)
            assert (first.type, first.data) == (ManagedProcessConnectEventType.DATA, b"hi\n")
            sandbox.processes.input(pty.process_id, "exit 4\n")
            last = list(frames)[-1]
        assert (last.type, last.exit_code) == (ManagedProcessConnectEventType.EXIT, 4)
