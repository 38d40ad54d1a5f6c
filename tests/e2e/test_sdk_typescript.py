"""The official TypeScript SDK's client and sandbox methods (``sdk_ts_smoke.mjs``) against a
thread-mode fake; its resource APIs run in ``tests/reliability/test_sdk_typescript_resources.py``
(a second Node process is too slow for the main suite)."""

from __future__ import annotations

from tests.e2e.ts_sdk import needs_node, run_ts_script


@needs_node
def test_typescript_sdk_client_and_sandbox_methods() -> None:
    assert len(run_ts_script("sdk_ts_smoke.mjs")) == 31
