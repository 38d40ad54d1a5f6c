"""The official TypeScript SDK's tutorial flow, its expose-a-service recipe and examples 03
and 52, unchanged, against ``createos-fake serve`` on the process runtime.

The files are test data under ``tests/e2e/official_ts`` (provenance and licence there). Each
runs with ``tsx`` in a scratch directory whose ``node_modules`` is the one CI installs (the SDK
under both of its names), as a user would run them against the service.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from benchmarks._serve import start_serve
from tests._needs import needs
from tests.fake_server._process_runtime import needs_nft

if TYPE_CHECKING:
    from collections.abc import Iterator

EXAMPLES = Path(__file__).resolve().parent / "official_ts"
NODE_PATH = os.environ.get("CREATEOS_TS_SDK_NODE_PATH", "")
KEY = "cos_official_ts_0123456789"

pytestmark = [
    pytest.mark.reliability,
    needs(
        None if NODE_PATH and (Path(NODE_PATH) / "tsx").is_dir() else "the TypeScript SDK and tsx",
        "npm install --prefix .ci/node @nodeops-createos/sandbox@0.7.1 "
        "createos-sandbox-sdk@npm:@nodeops-createos/sandbox@0.7.1 tsx@4.23.15 and export "
        "CREATEOS_TS_SDK_NODE_PATH=$PWD/.ci/node/node_modules (as .ci/run does)",
    ),
]


@pytest.fixture(scope="module", name="serve_url")
def _serve_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``createos-fake serve`` with the defaults a user gets (process runtime)."""
    served = start_serve(
        "--api-key", KEY, "--transitions", "immediate", "--rate-limit", "off",
        env=dict(os.environ, TMPDIR=str(tmp_path_factory.mktemp("serve"))),
    )  # fmt: skip
    yield served.origin
    assert served.stop(signal.SIGTERM) == (0, "")


def run_example(relative: str, url: str, scratch: Path) -> str:
    """Run one example file as its README says (with tsx instead of bun); its stdout."""
    source = EXAMPLES / relative
    shutil.copy(source, scratch / source.name)
    (scratch / "node_modules").symlink_to(NODE_PATH)
    (scratch / "package.json").write_text('{"type": "module"}\n')
    done = subprocess.run(
        [str(Path(NODE_PATH) / ".bin" / "tsx"), source.name],
        cwd=scratch,
        env=dict(os.environ, CREATEOS_SANDBOX_BASE_URL=url, CREATEOS_SANDBOX_API_KEY=KEY),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_tutorial_flow(serve_url: str, tmp_path: Path) -> None:
    out = run_example("tutorial_flow.ts", serve_url, tmp_path)
    assert "server is listening on :3000" in out
    assert "HTTP status : 200" in out
    assert "<h1>tutorial app</h1>" in out
    assert out.rstrip().endswith("sandbox destroyed")


def test_expose_a_service_recipe(serve_url: str, tmp_path: Path) -> None:
    out = run_example("expose-a-service.ts", serve_url, tmp_path)
    assert re.search(r"^HTTP 200 ", out, re.MULTILINE), out


def test_example_03_dev_server_preview_url(serve_url: str, tmp_path: Path) -> None:
    out = run_example("03-dev-server-preview-url/index.ts", serve_url, tmp_path)
    assert "<h1>hello from createos-sandbox preview URL</h1>" in out
    assert out.rstrip().endswith("destroyed")


@needs_nft  # its sandbox installs the SDK from the npm registry: a way out
def test_example_52_self_signal_pause_delete(serve_url: str, tmp_path: Path) -> None:
    out = run_example("52-self-signal-pause-delete/index.ts", serve_url, tmp_path)
    assert "[pause] sandbox paused itself (status=paused)" in out
    assert "worker: batch done — pausing self" in out
    assert "[delete] sandbox deleted itself — no cleanup needed" in out
