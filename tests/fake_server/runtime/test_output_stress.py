"""No output byte lost, on both runtimes, beside two CPU-burning processes.

Execs (buffered and streamed, alternately) and managed processes run a command whose output
comes from several writers at once (``_writers.SCRIPT``); every line of every writer must
arrive exactly once, whole, in its writer's order, on its stream. Eight clients of the
official SDK run them side by side on one thread-mode fake per runtime.

``CREATEOS_OUTPUT_STRESS_SCALE`` (default ``1``) multiplies the counts: at 1, 5,000 execs and
500 managed processes in all, half on each runtime (about two minutes on two idle cores);
``CREATEOS_OUTPUT_STRESS_SCALE=10`` for a long run.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import httpx
import pytest
from createos import Client
from createos.models import (
    CreateSandboxRequest,
    ExecStreamEventType,
    ManagedProcessConnectEventType,
    ManagedProcessCreateRequest,
    RunCommandRequest,
)

from fake_server import FakeCreateOS, TransitionPolicy, tls_context
from fake_server.runtime.api import RUNTIMES
from tests.fake_server._writers import LONG_SCRIPT, SCRIPT, missing

if TYPE_CHECKING:
    from collections.abc import Iterator

    from createos.instance import SandboxInstance


def _scale() -> float:
    raw = os.environ.get("CREATEOS_OUTPUT_STRESS_SCALE", "1")
    try:
        scale = float(raw)
    except ValueError:
        raise pytest.UsageError("CREATEOS_OUTPUT_STRESS_SCALE must be a number > 0") from None
    if not scale > 0:
        raise pytest.UsageError("CREATEOS_OUTPUT_STRESS_SCALE must be a number > 0")
    return scale


#: Per runtime.
EXECS = max(2, round(2500 * _scale()))
PROCESSES = max(1, round(250 * _scale()))
CLIENTS = 8

pytestmark = [pytest.mark.reliability, pytest.mark.usefixtures("cpu_burners")]
#: One command in ``_LONG_EVERY`` writes the long lines (72 KiB on stderr).
_LONG_EVERY = 10


def _script(index: int) -> tuple[str, bool]:
    long = index % _LONG_EVERY == 0
    return (LONG_SCRIPT if long else SCRIPT), long


@pytest.fixture(
    name="sandboxes",
    params=RUNTIMES,
)
def _sandboxes(request: pytest.FixtureRequest) -> Iterator[list[SandboxInstance]]:
    """One sandbox per client on a fresh fake of the runtime; nothing may fail inside it."""
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate(), runtime=request.param)
    fake.start()
    try:
        with (
            httpx.Client(verify=tls_context(), timeout=120) as http,
            Client(fake.api_key, base_url=fake.url, http_client=http) as client,
        ):
            shape = CreateSandboxRequest(shape="s-1vcpu-1gb")
            sandboxes = [client.create_sandbox(shape) for _ in range(CLIENTS)]
            yield sandboxes
            for sandbox in sandboxes:
                sandbox.destroy()
    finally:
        fake.close()
    assert fake.errors == []


def _exec(sandbox: SandboxInstance, index: int) -> str | None:
    script, long = _script(index)
    command = RunCommandRequest(command="bash", arguments=["-c", script])
    if index % 2 == 0:
        result = sandbox.run_command(command).result
        if result.exit_code != 0:
            return f"exit {result.exit_code}"
        return missing(result.standard_output, result.standard_error, long=long)
    with sandbox.stream_command(command) as stream:
        events = list(stream)
    last = events[-1]
    if last.type != ExecStreamEventType.EXIT or last.exit_code != 0:
        return f"ended with {last.type} {last.exit_code}"
    if any(e.type == ExecStreamEventType.EXIT for e in events[:-1]):
        return "an exit before the last event"
    text = {ExecStreamEventType.STDOUT: "", ExecStreamEventType.STDERR: ""}
    for event in events:
        if event.type in text:
            text[event.type] += event.data
    return missing(text[ExecStreamEventType.STDOUT], text[ExecStreamEventType.STDERR], long=long)


def _process(sandbox: SandboxInstance, index: int) -> str | None:
    script, long = _script(index)
    create = ManagedProcessCreateRequest(command="/bin/bash", arguments=["-c", script])
    process_id = sandbox.processes.create(create).process_id
    sandbox.processes.close_standard_input(process_id)
    with sandbox.processes.connect(process_id) as frames:
        events = list(frames)
    sandbox.processes.delete(process_id)
    last = events[-1]
    if last.type != ManagedProcessConnectEventType.EXIT or last.exit_code != 0:
        return f"ended with {last.type} {last.exit_code}"
    data = [e for e in events if e.type == ManagedProcessConnectEventType.DATA]
    if [e.sequence for e in data] != list(range(1, len(data) + 1)):
        return f"frame sequence {[e.sequence for e in data]}"
    out = b"".join(e.data for e in data if e.stream is not None and e.stream.value == "stdout")
    err = b"".join(e.data for e in data if e.stream is not None and e.stream.value == "stderr")
    return missing(out.decode(), err.decode(), long=long)


def test_every_line_of_every_writer_arrives_once_and_in_order(
    sandboxes: list[SandboxInstance],
) -> None:
    def one_exec(index: int) -> str | None:
        problem = _exec(sandboxes[index % CLIENTS], index)
        return None if problem is None else f"exec {index}: {problem}"

    def one_process(index: int) -> str | None:
        problem = _process(sandboxes[index % CLIENTS], index)
        return None if problem is None else f"process {index}: {problem}"

    with ThreadPoolExecutor(CLIENTS) as pool:
        problems = [p for p in pool.map(one_exec, range(EXECS)) if p is not None]
        problems += [p for p in pool.map(one_process, range(PROCESSES)) if p is not None]
    assert problems == []
