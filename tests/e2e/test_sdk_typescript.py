"""The official TypeScript SDK (npm ``@nodeops-createos/sandbox``) drives ``sdk_ts_smoke.mjs``
against a thread-mode fake. CI installs the package (``.ci/run``) and points
``CREATEOS_TS_SDK_NODE_PATH`` at its ``node_modules``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fake_server import FakeCreateOS, TransitionPolicy

SCRIPT = Path(__file__).with_name("sdk_ts_smoke.mjs")
NODE_PATH = os.environ.get("CREATEOS_TS_SDK_NODE_PATH", "")


@pytest.mark.skipif(
    not NODE_PATH or shutil.which("node") is None,
    reason="set CREATEOS_TS_SDK_NODE_PATH to a node_modules holding @nodeops-createos/sandbox",
)
def test_typescript_sdk_client_and_sandbox_methods() -> None:
    with FakeCreateOS(transitions=TransitionPolicy.immediate()) as fake:
        env = {
            **os.environ,
            "CREATEOS_API_KEY": fake.api_key,
            "CREATEOS_SANDBOX_BASE_URL": fake.url,
            "NODE_PATH": NODE_PATH,
        }
        run = subprocess.run(
            ["node", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert fake.errors == []
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["ok"] is True
    assert len(report["checked"]) == 31
