"""Benchmark: one keystroke to its echo through ``GET …/shell-ws`` against the same PTY
driven through the managed-process API (``POST …/input`` and the ``/connect`` stream).

Both use a real bash on a PTY (the process runtime) in one fake on the real clock; each round
measures ``keys`` keystrokes on each path, interleaved. Goal: the shell's round trip within
2x of the managed-process path's.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from typing import TYPE_CHECKING

import aiohttp
import httpx

from benchmarks._common import Report, finish, interleave_async, median, parse_args, timer
from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.clock import RealClock

if TYPE_CHECKING:
    from collections.abc import Sequence


async def _shell_keys(
    fake: FakeCreateOS, http: aiohttp.ClientSession, box: str, keys: int
) -> float:
    url = f"{fake.url}/v1/sandboxes/{box}/shell-ws"
    async with http.ws_connect(url) as ws:
        await ws.send_bytes(b"echo ready\n")
        seen = b""
        while b"ready\r\n" not in seen.split(b"echo ready", 1)[-1]:
            seen += (await ws.receive()).data
        start = timer()
        for _ in range(keys):
            await ws.send_bytes(b"x")
            while b"x" not in (await ws.receive()).data:
                pass
        elapsed = (timer() - start) / keys
        await ws.send_bytes(b"\x15exit\n")
        async for _ in ws:
            pass
    return elapsed


async def _process_keys(client: httpx.AsyncClient, box: str, keys: int) -> float:
    base = f"/v1/sandboxes/{box}/processes"
    made = await client.post(base, json={"cmd": "/bin/bash", "pty": {"rows": 24, "cols": 80}})
    proc = f"{base}/{made.json()['data']['process_id']}"
    key = {"data_base64": base64.b64encode(b"x").decode()}
    async with client.stream("GET", proc + "/connect") as stream:
        lines = stream.aiter_lines()
        start = timer()
        for _ in range(keys):
            await client.post(proc + "/input", json=key)
            async for line in lines:
                frame = json.loads(line)
                if frame.get("type") == "data" and b"x" in base64.b64decode(frame["data_base64"]):
                    break
        elapsed = (timer() - start) / keys
    await client.delete(proc, params={"grace_ms": 0})
    return elapsed


async def run(rounds: int, keys: int) -> Report:
    report = Report("interactive shell: keystroke round trip, shell-ws vs managed PTY", rounds)
    fake = FakeCreateOS(
        clock=RealClock(),
        transitions=TransitionPolicy.immediate(),
        runtime="process",
        rate_limit=None,
    )
    async with fake:
        headers = {"X-Api-Key": fake.api_key}
        async with (
            httpx.AsyncClient(base_url=fake.url, headers=headers, timeout=60) as client,
            aiohttp.ClientSession(headers=headers) as http,
        ):
            box = (await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()
            box_id = box["data"]["id"]
            samples = await interleave_async(
                {
                    "shell-ws": lambda: _shell_keys(fake, http, box_id, keys),
                    "managed PTY": lambda: _process_keys(client, box_id, keys),
                },
                rounds,
            )
            await client.delete(f"/v1/sandboxes/{box_id}")
    shell, managed = median(samples["shell-ws"]), median(samples["managed PTY"])
    report.add("keystroke round trip: shell-ws", shell * 1000, "ms", f"{keys} keys per round")
    report.add("keystroke round trip: managed PTY", managed * 1000, "ms", "POST /input + /connect")
    report.goal("shell-ws / managed PTY", shell / managed, 2.0, "x", higher_is_better=False)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=5)
    keys = args.scale.pick(full=50, smoke=3)  # one line: no wrap at 80 columns
    return finish(asyncio.run(run(args.rounds, keys)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
