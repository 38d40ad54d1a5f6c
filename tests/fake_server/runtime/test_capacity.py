"""Past the open-files limit the fake answers the service's 503 "no host with capacity" with
``Retry-After`` (TS ``errors.ts``), never a 500, and recovers.

Each live sandbox holds 3 file descriptors (its disk) and each running command 3 more (see
``fake_server.runtime.capacity``). The check runs in a child process whose ``RLIMIT_NOFILE`` is
lowered to 256, so a few dozen sandboxes reach it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="RLIMIT_NOFILE and /proc/self/fd (Linux)"
    ),
]

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
        return [
            reply.status_code, body.get("data", {}).get("code"), body.get("message"),
            reply.headers.get("Retry-After"),
        ]

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


def test_running_out_of_file_descriptors_is_a_503_naming_the_limit() -> None:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    capacity = (LIMIT - 48) // 3
    message = (
        "no host with capacity; the fake is at capacity: each live sandbox holds 3 file "
        "descriptors and each running "
        f"command 3 more, within the open-files limit ({LIMIT}, about {capacity} live "
        "sandboxes); destroy sandboxes or raise the limit (ulimit -n)"
    )
    assert report["create"] == [503, "fake_at_capacity", message, "1"]
    assert report["statuses"] == [200, 503]
    assert 20 <= report["created"] <= capacity
    assert report["exec"] == [503, "fake_at_capacity", message, "1"]
    assert report["process"] == [503, "fake_at_capacity", message, "1"]
    assert report["exec_after_destroy"] == [
        200,
        {"exit_code": 0, "stdout": "ok\n", "stderr": "", "error": ""},
    ]
    assert report["errors"] == []


RETRY_CHILD = textwrap.dedent(
    """
    import json, os, resource, subprocess, sys, types
    import httpx
    import createos._transport as transport
    from createos import Client
    from createos.models import CreateSandboxRequest
    from fake_server import FakeCreateOS, TransitionPolicy

    NOFILE = resource.RLIMIT_NOFILE
    resource.setrlimit(NOFILE, (FD_LIMIT, resource.getrlimit(NOFILE)[1]))
    report = {}
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate()).start()
    http = httpx.Client(base_url=fake.url, headers={"X-Api-Key": fake.api_key})

    def fill():
        ids = []
        while True:
            reply = http.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
            if reply.status_code != 200:
                return ids, [reply.status_code, reply.headers.get("Retry-After")]
            ids.append(reply.json()["data"]["id"])

    ids, report["full"] = fill()
    delays = []

    def sleep(seconds):  # the SDK's wait before its retry: room is made meanwhile
        delays.append(seconds)
        for _ in range(ROOM):  # the SDK's own connection holds descriptors of this process too
            http.delete(f"/v1/sandboxes/{ids.pop()}")

    transport.time = types.SimpleNamespace(sleep=sleep)
    with Client(fake.api_key, base_url=fake.url) as sdk:
        made = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    report["python"] = [delays, made.status.value]
    if os.environ.get("NODE_PATH"):
        ids += fill()[0]
        env = {
            **os.environ, "CREATEOS_API_KEY": fake.api_key,
            "CREATEOS_SANDBOX_BASE_URL": fake.url, "ROOM": ",".join(ids[-2 * ROOM :]),
        }
        node = subprocess.run(
            ["node", "--input-type=module", "-e", NODE], env=env,
            capture_output=True, text=True, timeout=60,
        )
        report["node"] = [node.returncode, node.stdout.strip(), node.stderr[-2000:]]
    statuses = [
        e.status for e in fake.journal.events
        if e.kind == "response" and e.operation == "create_sandbox"
    ]
    report["last_creates"] = statuses[-2:]
    report["errors"] = fake.errors
    fake.close()
    print(json.dumps(report))
    """
)

#: The TS SDK's create: its ``onRetry`` hook (awaited before the wait) destroys a sandbox, so
#: the retry after ``Retry-After`` (one real second) finds room.
NODE = """
import path from "node:path";
import { pathToFileURL } from "node:url";
const entry = path.join(process.env.NODE_PATH, "@nodeops-createos/sandbox/dist/index.js");
const sdk = await import(pathToFileURL(entry).href);
const base = process.env.CREATEOS_SANDBOX_BASE_URL;
const retries = [];
const client = new sdk.CreateosSandboxClient({
  apiKey: process.env.CREATEOS_API_KEY, baseUrl: base,
  hooks: { onRetry: async (e) => {
    retries.push([e.status, e.reason, e.delayMs]);
    for (const id of process.env.ROOM.split(",")) {
      await fetch(`${base}/v1/sandboxes/${id}`,
        { method: "DELETE", headers: { "X-Api-Key": process.env.CREATEOS_API_KEY } });
    }
  } },
});
const box = await client.createSandbox({ shape: "s-1vcpu-1gb" });
console.log(JSON.stringify({ status: box.status, retries }));
"""


def test_both_sdks_retry_a_create_out_of_capacity_after_retry_after() -> None:
    """TS ``errors.ts`` ("Service unavailable (503): no host with capacity. Retry shortly."),
    ``http.ts`` ``isRetryableStatus`` (503 for any method, honouring ``Retry-After``) and
    ``docs/explanation/reliability.md``; Python ``_transport._retryable`` and
    ``_retry_after``. The create no host could place succeeds on the SDK's own retry once room
    is made during its wait (the Python SDK's sleep is replaced, not slept)."""
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    node_path = os.environ.get("CREATEOS_TS_SDK_NODE_PATH", "")
    env.pop("NODE_PATH", None)
    if node_path and shutil.which("node"):
        env["NODE_PATH"] = node_path
    code = f"NODE = {NODE!r}\nROOM = 3\n" + RETRY_CHILD.replace("FD_LIMIT", str(LIMIT))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["full"] == [503, "1"]
    assert report["python"] == [[1.0], "running"]
    if "node" in report:
        code_, out, err = report["node"]
        assert code_ == 0, err
        assert json.loads(out) == {"status": "running", "retries": [[503, "rate-limit", 1000]]}
        assert report["last_creates"] == [503, 200]  # the TS SDK's attempt, then its retry
    assert report["errors"] == []
