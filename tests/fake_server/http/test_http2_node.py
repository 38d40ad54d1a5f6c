"""Node's own HTTP/2 client against the fake: ``node:http2``, the module the TS SDK 0.8 opens
its session with (``src/http.ts``: ``http2.connect(origin)``, h2c with prior knowledge on
``http://``). A streamed exec's first frame reaches Node while the command still runs: the
script lets the command finish only from there (a file it uploads on the same session)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fake_server import FakeCreateOS, TransitionPolicy

HERE = Path(__file__).parent


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_node_http2_session_serves_requests_and_streams() -> None:
    with FakeCreateOS(transitions=TransitionPolicy.immediate()) as fake:
        run = subprocess.run(
            ["node", str(HERE / "http2_client.mjs"), fake.url, fake.api_key],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert fake.errors == []
        operations = [e.operation for e in fake.journal.events if e.kind == "request"]
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report == {
        "create": 200,
        "get": "running",
        "released": 200,
        "frames": [{"stdout": "one\n"}, {"stdout": "two\n"}, {"exit_code": 0}],
    }
    assert operations == ["create_sandbox", "get_sandbox", "exec_stream", "upload_file"]
