"""``pytest --createos-ui`` on a terminal: a failing test's fake keeps serving, its dashboard
shows the test's sandbox, and the run goes on when Enter is pressed. A pytest in a child
process with a pseudo-terminal on stdin (a few seconds: the reliability step)."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.reliability

ROOT = Path(__file__).resolve().parents[2]
FAILING = """
import httpx


def test_fails_with_a_sandbox(createos_fake):
    created = httpx.post(
        createos_fake.url + "/v1/sandboxes",
        json={"shape": "s-1vcpu-1gb", "name": "left-for-inspection"},
        headers={"X-Api-Key": createos_fake.api_key},
    )
    assert created.status_code == 200
    assert False, "on purpose"
"""


def test_a_failing_test_waits_in_the_dashboard_until_enter(pytester: pytest.Pytester) -> None:
    test_file = pytester.makepyfile(test_ui_pause=FAILING)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    primary, secondary = os.openpty()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)]
    child = subprocess.Popen(
        [*command, "--createos-ui"],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=pytester.path,
        env=env,
        text=True,
    )
    os.close(secondary)
    lines: queue.Queue[str] = queue.Queue()
    assert child.stdout is not None
    stdout = child.stdout
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True)
    reader.start()
    try:
        seen: list[str] = []
        while not seen or "press Enter to go on" not in seen[-1]:
            seen.append(lines.get(timeout=60))
        text = "".join(seen)
        url = re.search(r"dashboard: (http://\S+)", text)
        key = re.search(r"control key \(the login\): (\S+)", text)
        assert url is not None, text
        assert key is not None, text
        assert "test_fails_with_a_sandbox failed; its fake keeps serving" in text
        page, _, fragment = url.group(1).partition("#/sandbox/")
        assert page.endswith("/_fake/ui/")
        with httpx.Client(base_url=page, timeout=10) as browser:
            assert browser.post("login", json={"key": key.group(1)}).status_code == 200
            rows = browser.get("api/overview").json()["sandboxes"]
        assert [(r["id"], r["name"], r["status"]) for r in rows] == [
            (fragment, "left-for-inspection", "running")
        ]
        assert child.poll() is None  # still waiting
        os.write(primary, b"\n")
        assert child.wait(timeout=60) == 1  # the run went on and reported the failure
        reader.join(timeout=10)
        rest = []
        while not lines.empty():
            rest.append(lines.get_nowait())
        assert "1 failed" in "".join(rest)
    finally:
        os.close(primary)
        if child.poll() is None:
            child.kill()
            child.wait()
        reader.join(timeout=10)  # at the child's end of output
        stdout.close()
