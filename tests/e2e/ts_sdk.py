"""Runs a Node script of the official TypeScript SDK (npm ``@nodeops-createos/sandbox``)
against a fresh thread-mode fake. CI installs the package (``.ci/run``) and points
``CREATEOS_TS_SDK_NODE_PATH`` at its ``node_modules``; without it the tests skip with the line
that installs it (and fail under ``CI=true``: ``tests/_needs.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from fake_server import FakeCreateOS, TransitionPolicy
from tests._needs import needs

__all__ = ["HERE", "INSTALL", "NODE_PATH", "needs_node", "run_ts_script"]

HERE = Path(__file__).parent
NODE_PATH = os.environ.get("CREATEOS_TS_SDK_NODE_PATH", "")

#: The official TypeScript SDK, in a ``node_modules`` that ``CREATEOS_TS_SDK_NODE_PATH`` names.
INSTALL = (
    "npm install --prefix .ci/node @nodeops-createos/sandbox@0.7.1 and export "
    "CREATEOS_TS_SDK_NODE_PATH=$PWD/.ci/node/node_modules (as .ci/run does)"
)


def _sdk_missing() -> str | None:
    if shutil.which("node") is None:
        return "Node.js and the TypeScript SDK"
    if not NODE_PATH or not (Path(NODE_PATH) / "@nodeops-createos" / "sandbox").is_dir():
        return "the TypeScript SDK @nodeops-createos/sandbox"
    return None


needs_node = needs(_sdk_missing(), INSTALL)


def run_ts_script(script: str) -> list[str]:
    """Run ``script`` (next to this file) against a fresh fake; the methods it checked."""
    with FakeCreateOS(transitions=TransitionPolicy.immediate()) as fake:
        env = {
            **os.environ,
            "CREATEOS_API_KEY": fake.api_key,
            "CREATEOS_SANDBOX_BASE_URL": fake.url,
            "CREATEOS_FAKE_CONTROL_KEY": fake.control_key,
            "NODE_PATH": NODE_PATH,
        }
        run = subprocess.run(
            ["node", str(HERE / script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert fake.errors == []
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["ok"] is True
    checked: list[str] = report["checked"]
    return checked
