"""The official CreateOS SDK (sync client) drives a full workflow against a thread-mode fake."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import httpx
import pytest
from createos import Client
from createos.errors import APIError
from createos.models import (
    CreateSandboxRequest,
    ExecStreamEventType,
    ManagedProcessConnectEventType,
    ManagedProcessCreateRequest,
    ManagedProcessDeleteOptions,
    ManagedProcessWaitOptions,
    RunCommandRequest,
    SandboxStatus,
)

from fake_server import FakeCreateOS, TransitionPolicy, tls_context

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(name="fake", scope="module")
def _fake() -> Iterator[FakeCreateOS]:
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate()).start()
    yield fake
    fake.close()
    assert fake.errors == []


@pytest.fixture(name="client")
def _client(fake: FakeCreateOS) -> Iterator[Client]:
    with (
        httpx.Client(verify=tls_context()) as http,
        Client(fake.api_key, base_url=fake.url, http_client=http) as client,
    ):
        yield client


def test_catalog_and_identity(fake: FakeCreateOS, client: Client) -> None:
    assert client.health().up is True
    assert client.readiness().ready is True
    assert "s-1vcpu-1gb" in [shape.id for shape in client.list_shapes()]
    rootfs = client.list_root_file_systems()
    assert rootfs.default == "devbox:1"
    assert rootfs.entries[0].name == "devbox:1"
    assert client.who_am_i().user_id.startswith("usr-")


def test_full_workflow(fake: FakeCreateOS, client: Client) -> None:
    sandbox = client.create_sandbox(
        CreateSandboxRequest(
            shape="s-1vcpu-1gb", rootfs="python:3.12", environment_variables={"GREETING": "hello"}
        )
    )
    assert sandbox.status == SandboxStatus.RUNNING  # create answers once the sandbox runs
    sandbox.wait_until_running()
    assert sandbox.data.rootfs == "python:3.12"

    result = sandbox.shell("echo $GREETING from $(pwd)").result
    assert (result.exit_code, result.standard_output) == (0, "hello from /root\n")

    with sandbox.stream_command(
        RunCommandRequest(command="bash", arguments=["-lc", "echo out; echo err >&2; exit 2"])
    ) as stream:
        events = list(stream)
    # stdout and stderr are two pipes: each keeps its order, but which one is read first is
    # not fixed, nor where a stream's text is cut into events (a real service sends what each
    # read of a pipe returned); only each stream's text and the exit last are (see "Output
    # guarantees" in docs/fake-server.md).
    by_stream = {
        kind: "".join(e.data for e in events if e.type == kind)
        for kind in (ExecStreamEventType.STDOUT, ExecStreamEventType.STDERR)
    }
    assert by_stream == {ExecStreamEventType.STDOUT: "out\n", ExecStreamEventType.STDERR: "err\n"}
    assert {e.type for e in events[:-1]} <= set(by_stream)  # no heartbeat, error or exit
    assert (events[-1].type, events[-1].exit_code) == (ExecStreamEventType.EXIT, 2)

    payload = os.urandom(5 * 1024 * 1024)
    sandbox.files.upload("/data/blob.bin", payload)
    with sandbox.files.download("/data/blob.bin") as download:
        assert download.read() == payload

    # The script reads its stdin, so it cannot exit before the close below: a process that
    # has already exited has its stdin closed, and closing it again is a 409 (a race the
    # providers tolerate, and that made this test fail one run in six).
    process = sandbox.processes.create(
        ManagedProcessCreateRequest(
            command="/bin/bash", arguments=["-lc", "read -r line; echo managed; exit 5"]
        )
    )
    sandbox.processes.close_standard_input(process.process_id)
    with sandbox.processes.connect(process.process_id) as frames:
        seen = [(f.type, f.sequence, f.data, f.exit_code) for f in frames]
    assert seen == [
        (ManagedProcessConnectEventType.DATA, 1, b"managed\n", None),
        (ManagedProcessConnectEventType.EXIT, 0, b"", 5),
    ]
    waited = sandbox.processes.wait(process.process_id, ManagedProcessWaitOptions(wait_timeout=5))
    assert (waited.tree_exited, waited.exit_code) == (True, 5)
    with pytest.raises(APIError) as closed:
        sandbox.processes.close_standard_input(process.process_id)
    assert closed.value.status_code == 409
    assert str(closed.value).endswith(
        "HTTP 409: code: stdin_closed; message: stdin is already closed"
    )
    assert [p.process_id for p in sandbox.processes.list()] == [process.process_id]
    deleted = sandbox.processes.delete(
        process.process_id, ManagedProcessDeleteOptions(grace_period=1)
    )
    assert deleted.tree_exited is True

    sandbox.pause()
    assert sandbox.status == SandboxStatus.PAUSING
    sandbox.wait_until_paused()
    sandbox.resume()
    sandbox.wait_until_running()
    with sandbox.files.download("/data/blob.bin") as download:
        assert download.read() == payload

    sandbox.destroy()
    assert sandbox.status == SandboxStatus.DESTROYING
    sandbox.wait_until_destroyed()
    assert fake.sandbox(sandbox.id).status == "destroyed"


def test_listing_through_the_sdk(fake: FakeCreateOS, client: Client) -> None:
    created = client.create_sandbox(CreateSandboxRequest(shape="s-2vcpu-2gb"))
    listed = {s.id: s.data.shape for s in client.list_sandboxes()}
    assert listed[created.id] == "s-2vcpu-2gb"
    assert client.get_sandbox(created.id).status == SandboxStatus.RUNNING


def test_realistic_transitions_complete_for_the_sdk_on_a_virtual_clock() -> None:
    """The SDK polls on wall time; the fake's virtual clock still reaches each completion."""
    with FakeCreateOS() as fake, Client(fake.api_key, base_url=fake.url) as client:
        sandbox = client.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
        sandbox.wait_until_running()
        sandbox.pause()
        sandbox.wait_until_paused()
        assert fake.clock.now() == pytest.approx(2.05)
        assert [e.detail for e in fake.journal.transitions(sandbox.id)] == [
            "- -> creating",
            "creating -> running",
            "running -> pausing",
            "pausing -> paused",
        ]
