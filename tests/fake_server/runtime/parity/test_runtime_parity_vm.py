"""The VM process model on both runtimes, through the official SDK: background jobs and
daemons, and the in-guest agent (docs/howto/process-runtime.md, "Differences")."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from createos.models import RunCommandRequest

from tests._helpers import bashkit_differs

if TYPE_CHECKING:
    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.reliability


def bash(box: SandboxInstance, script: str) -> tuple[int, str]:
    result = box.run_command(RunCommandRequest(command="/bin/bash", arguments=["-c", script]))
    return result.result.exit_code, result.result.standard_output


@pytest.fixture(name="daemons_outlive_exec")
def _daemons_outlive_exec(rt_fake: FakeCreateOS, request: pytest.FixtureRequest) -> None:
    bashkit_differs(
        rt_fake, request, "bashkit runs a & job to its end before the exec returns; nothing "
        "outlives the exec and ps shows only bash",
    )  # fmt: skip


@pytest.fixture(name="agent_listens")
def _agent_listens(rt_fake: FakeCreateOS, request: pytest.FixtureRequest) -> None:
    bashkit_differs(rt_fake, request, "bashkit's curl reaches no agent on 127.0.0.1:1029")


def test_a_background_job_ends_before_or_with_the_exec(box: SandboxInstance) -> None:
    assert bash(box, "(sleep 0.1; echo job) & echo now; wait") == (0, "now\njob\n")


@pytest.mark.usefixtures("daemons_outlive_exec")
def test_a_detached_daemon_outlives_its_exec(box: SandboxInstance) -> None:
    assert bash(box, "nohup setsid sleep 300 >/tmp/log 2>&1 & echo started") == (0, "started\n")
    # Until setsid has become the daemon: the init of a process-runtime sandbox runs a
    # "sleep 2147483647" of its own, so a bare "pgrep -x sleep" finds that one at once.
    wait = "for i in $(seq 500); do pgrep -fx 'sleep 300' >/dev/null && break; sleep 0.01; done"
    _, listed = bash(box, f"{wait}; ps -eo args")
    assert "sleep 300" in listed.splitlines()


@pytest.mark.usefixtures("agent_listens")
def test_the_agent_answers_inside_the_sandbox(box: SandboxInstance) -> None:
    probe = "curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:1029/self/nothing"
    assert bash(box, probe) == (0, "404")
