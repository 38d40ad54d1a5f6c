"""The devbox image's package managers on the process runtime, offline: ``npm install -g`` of
a local package lands in the system, survives pause/resume and is copied by fork. (npm takes
seconds, hence the reliability step; dpkg and pip are in tests/e2e/test_sdk_devbox.py.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from fake_server.runtime.process import ProcessRuntime
from tests.fake_server._process_runtime import no_bwrap_left, sh

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = [pytest.mark.reliability, pytest.mark.asyncio]

PACKAGE = (
    "set -e; mkdir -p /tmp/hello && cd /tmp/hello; "
    """printf '{"name":"createos-hello","version":"1.0.0","bin":{"createos-hello":"cli.js"}}' """
    "> package.json; printf '#!/usr/bin/env node\\nconsole.log(\"hello from npm\")\\n' > cli.js; "
    "npm pack -q --pack-destination /tmp >/dev/null; "
    "npm install -g --offline --no-audit --no-fund /tmp/createos-hello-1.0.0.tgz >/dev/null 2>&1"
)
CHECK = "createos-hello; command -v createos-hello; bun -e 'console.log(6 * 7)'"


@pytest_asyncio.fixture(name="runtime")
async def _runtime(tmp_path: Path) -> AsyncIterator[ProcessRuntime]:
    runtime = ProcessRuntime(base=tmp_path / "sandboxes")
    yield runtime
    runtime.close()
    assert await no_bwrap_left()
    assert list((tmp_path / "sandboxes").iterdir()) == []


async def test_npm_install_g_lands_in_the_system_survives_pause_and_is_forked(
    runtime: ProcessRuntime,
) -> None:
    machine = runtime.new_sandbox("sb")
    assert await sh(machine, PACKAGE) == (0, "")
    # npm's global prefix is the system's: /usr/local on Debian 13's npm (as on Ubuntu's),
    # /usr where the host's npm was built so
    code, prefix = await sh(machine, "npm prefix -g")
    assert (code, prefix) in ((0, "/usr\n"), (0, "/usr/local\n"))
    expected = (0, f"hello from npm\n{prefix.strip()}/bin/createos-hello\n42\n")
    assert await sh(machine, CHECK) == expected
    machine.pause()
    machine.resume()
    assert await sh(machine, CHECK) == expected
    fork = machine.fork()
    assert await sh(fork, CHECK) == expected
    assert await sh(runtime.new_sandbox("other"), "command -v createos-hello") == (127, "")
