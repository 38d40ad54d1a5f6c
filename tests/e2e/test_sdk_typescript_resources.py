"""The official TypeScript SDK's ``templates``, ``networks`` and ``disks`` APIs and the
sandbox's disk and network methods (``tests/e2e/sdk_ts_resources.mjs``, every answer checked)
against a thread-mode fake. Here rather than in ``tests/e2e`` because the Node process costs
more than the main suite's budget."""

from __future__ import annotations

import pytest

from tests.e2e.ts_sdk import needs_node, run_ts_script

pytestmark = pytest.mark.reliability

#: The 0.7.1 methods of ``templates``, ``networks``, ``disks`` and the sandbox's disk and
#: network methods (``src/client.ts``, ``src/sandbox.ts``): all 24, in the order checked.
RESOURCE_METHODS = [
    *(f"templates.{m}" for m in ("create", "get", "logs", "followLogs", "list", "iterate")),
    "templates.delete",
    "networks.create",
    "sandbox.attachNetwork",
    *(f"networks.{m}" for m in ("get", "list", "iterate")),
    "sandbox.detachNetwork",
    "networks.delete",
    *(f"disks.{m}" for m in ("create", "get", "list", "iterate", "rotateCredentials")),
    *(f"sandbox.{m}" for m in ("attachDisk", "listDisks", "iterateDisks", "detachDisk")),
    "disks.delete",
]


@needs_node
def test_typescript_sdk_templates_networks_and_disks() -> None:
    assert run_ts_script("sdk_ts_resources.mjs") == RESOURCE_METHODS
