"""A cold first run: a new ``createos-fake serve`` in a new interpreter that finds no bytecode
(every module of the fake and its dependencies compiled from source as it is first imported),
and the first exec of its first sandbox, checked byte for byte.

The ``process`` runtime's first exec starts a new interpreter inside the sandbox too (a
Python that writes its line at exit, then a pipeline), the command a downstream project once
saw lose its Python line on a cold machine.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import httpx
import pytest
from createos import Client
from createos.models import CreateSandboxRequest, ExecStreamEventType, RunCommandRequest

from benchmarks._serve import start_serve
from fake_server import tls_context
from fake_server.runtime.api import RUNTIMES
from tests.fake_server._writers import SCRIPT, missing

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.reliability

#: Written by a Python started inside the sandbox, at its exit (stdout to a pipe is buffered).
_PYTHON = (
    "import sys, json; print(json.dumps(sys.version_info[:2])); "
    "sys.stdout.write(''.join(f'{i} é✓\\n' for i in range(3000))); "
    "sys.stderr.write('to stderr\\n')"
)
_FIRST = f"python3 -B -c {_PYTHON!r}; echo 'pipeline end' | cut -d' ' -f1-2"


#: What follows the version line on stdout.
_AFTER_VERSION = "".join(f"{i} é✓\n" for i in range(3000)) + "pipeline end\n"


@pytest.fixture(name="cold_serve", params=RUNTIMES)
def _cold_serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``createos-fake serve`` in a fresh interpreter whose bytecode cache is an empty
    directory it may not write to (``-B``): the origin and the key it printed."""
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": str(tmp_path / "no-bytecode"),
    }
    served = start_serve(
        "--transitions", "immediate", "--runtime", request.param, env=env, python=["-B"]
    )
    try:
        yield served.origin, served.key
    finally:
        status = served.stop()
    assert status == (0, "")
    assert list((tmp_path / "no-bytecode").rglob("*.pyc")) == []


def test_the_first_exec_of_a_cold_fake_loses_no_byte(
    cold_serve: tuple[str, str], request: pytest.FixtureRequest
) -> None:
    origin, key = cold_serve
    runtime = request.node.callspec.params["cold_serve"]
    with (
        httpx.Client(verify=tls_context(), timeout=120) as http,
        Client(key, base_url=origin, http_client=http) as client,
    ):
        sandbox = client.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
        if runtime == "process":
            first = RunCommandRequest(command="bash", arguments=["-lc", _FIRST])
            got = sandbox.run_command(first).result
            assert (got.exit_code, got.standard_error) == (0, "to stderr\n")
            version, rest = got.standard_output.split("\n", 1)
            assert json.loads(version)[0] == 3  # the sandbox's own python3, whichever minor
            assert rest == _AFTER_VERSION
        command = RunCommandRequest(command="bash", arguments=["-c", SCRIPT])
        with sandbox.stream_command(command) as stream:
            events = list(stream)
        assert (events[-1].type, events[-1].exit_code) == (ExecStreamEventType.EXIT, 0)
        stdout = "".join(e.data for e in events if e.type == ExecStreamEventType.STDOUT)
        stderr = "".join(e.data for e in events if e.type == ExecStreamEventType.STDERR)
        assert missing(stdout, stderr) is None
        buffered = sandbox.run_command(command).result
        assert missing(buffered.standard_output, buffered.standard_error) is None
        sandbox.destroy()
