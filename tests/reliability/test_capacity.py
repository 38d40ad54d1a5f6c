"""Past the open-files limit the fake answers a clear 507, never a 500, and recovers.

Each live sandbox holds 3 file descriptors (its disk) and each running command 3 more (see
``fake_server.runtime.capacity``). The check runs in a child process whose ``RLIMIT_NOFILE`` is
lowered to 256, so a few dozen sandboxes reach it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_NOFILE and /proc/self/fd (Linux)"
)

LIMIT = 256

CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, sys
    import httpx
    from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport

    NOFILE = resource.RLIMIT_NOFILE
    resource.setrlimit(NOFILE, (FD_LIMIT, resource.getrlimit(NOFILE)[1]))

    def brief(reply):
        body = reply.json()
        return [reply.status_code, body.get("data", {}).get("code"), body.get("message")]

    async def main():
        report = {}
        fake = FakeCreateOS(clock=VirtualClock(), transitions=TransitionPolicy.immediate())
        async with fake, httpx.AsyncClient(
            base_url=fake.url, headers={"X-Api-Key": fake.api_key},
            transport=clock_transport(fake.clock),
        ) as client:
            ids, statuses = [], []
            while len(ids) < 1000:
                reply = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
                statuses.append(reply.status_code)
                if reply.status_code != 200:
                    report["create"] = brief(reply)
                    break
                ids.append(reply.json()["data"]["id"])
            report["created"] = len(ids)
            report["statuses"] = sorted(set(statuses))
            run = {"cmd": "bash", "args": ["-c", "echo ok"]}
            report["exec"] = brief(await client.post(f"/v1/sandboxes/{ids[0]}/exec", json=run))
            report["process"] = brief(
                await client.post(f"/v1/sandboxes/{ids[0]}/processes", json=run)
            )
            for sandbox_id in ids[-2:]:
                await client.delete(f"/v1/sandboxes/{sandbox_id}")
            after = await client.post(f"/v1/sandboxes/{ids[0]}/exec", json=run)
            report["exec_after_destroy"] = [after.status_code, after.json()["data"]["result"]]
            report["errors"] = fake.errors
        print(json.dumps(report))

    asyncio.run(main())
    """
).replace("FD_LIMIT", str(LIMIT))


def test_running_out_of_file_descriptors_is_a_507_naming_the_limit() -> None:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    capacity = (LIMIT - 48) // 3
    message = (
        "the fake is at capacity: each live sandbox holds 3 file descriptors and each running "
        f"command 3 more, within the open-files limit ({LIMIT}, about {capacity} live "
        "sandboxes); destroy sandboxes or raise the limit (ulimit -n)"
    )
    assert report["create"] == [507, "fake_at_capacity", message]
    assert report["statuses"] == [200, 507]
    assert 20 <= report["created"] <= capacity
    assert report["exec"] == [507, "fake_at_capacity", message]
    assert report["process"] == [507, "fake_at_capacity", message]
    assert report["exec_after_destroy"] == [
        200,
        {"exit_code": 0, "stdout": "ok\n", "stderr": "", "error": ""},
    ]
    assert report["errors"] == []
