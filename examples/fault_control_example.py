"""The fault control API driven by curl (examples/fault_control.sh) against the fixture's fake."""

import json
import pathlib
import shutil
import subprocess

import pytest

SCRIPT = pathlib.Path(__file__).with_name("fault_control.sh")


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_faults_over_the_control_api(createos_fake, createos_lease):
    sandbox_id = createos_lease.provider_lease_id
    done = subprocess.run(
        ["sh", str(SCRIPT), createos_fake.url, createos_fake.control_key, sandbox_id],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    armed, listed, removed, cleared, applied, refused = map(json.loads, done.stdout.splitlines())

    assert armed["data"]["id"] == 1
    assert armed["data"]["times"] == 1
    assert listed["data"]["unfired"] == [1]
    assert removed == {"status": "success", "data": {"removed": 1}}
    assert cleared == {"status": "success", "data": {"cleared": 0}}
    assert applied["data"]["applied"]["status"] == "failed"
    assert createos_fake.sandbox(sandbox_id).status == "failed"
    assert refused == {
        "status": "fail",
        "data": {"action.status": "status must be an HTTP error status between 400 and 599"},
    }
