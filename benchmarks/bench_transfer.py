"""Benchmark 2: bulk bytes through the fake.

* a 5 MiB upload plus download through the files API against a bare aiohttp handler that
  keeps the bytes in a dict (goal: the fake keeps >= 50% of the bare throughput);
* 1 MiB of process output read live through ``/connect`` (goal >= 20 MB/s): a registered
  command writes 16 chunks of 64 KiB; the clock starts at ``stdin/close`` (the process is
  released) and stops at the exit frame. Replaying the same output after the process finished
  is reported too: it isolates the NDJSON streaming from the process plumbing.

Run: ``python benchmarks/bench_transfer.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from benchmarks._common import Report, finish, interleave_async, median, parse_args, timer
from benchmarks._servers import bare_server, fake_with_sandbox, serve_fake

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fake_server import FakeCreateOS
    from fake_server.runtime.bashkit import CommandFunc, CommandIO

__all__ = ["main", "run"]

MIB = 1024 * 1024
FILE_GOAL_FRACTION = 0.5
OUTPUT_GOAL_MB_S = 20.0
OUTPUT_CHUNK = 64 * 1024
BIG_FILE = "/tmp/bench/output.bin"


def bare_files_app() -> web.Application:
    """PUT stores the body under ``path``, GET returns it: the least a files API does."""
    files: dict[str, bytes] = {}

    async def upload(request: web.Request) -> web.Response:
        files[request.query["path"]] = await request.read()
        return web.json_response({"status": "success", "data": {}})

    async def download(request: web.Request) -> web.Response:
        return web.Response(body=files[request.query["path"]])

    app = web.Application(client_max_size=64 * MIB)
    app.router.add_put("/v1/sandboxes/{sandbox_id}/files", upload)
    app.router.add_get("/v1/sandboxes/{sandbox_id}/files", download)
    return app


async def _round_trip(session: aiohttp.ClientSession, url: str, payload: bytes) -> float:
    """Seconds for one upload and one download of ``payload``."""
    params = {"path": "/tmp/bench/blob.bin"}
    start = timer()
    async with session.put(url, params=params, data=payload) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"upload answered HTTP {response.status}")
    async with session.get(url, params=params) as response:
        body = await response.read()
        if response.status != 200 or len(body) != len(payload):
            raise RuntimeError(f"download answered HTTP {response.status}")
    return timer() - start


def _spew(total: int) -> CommandFunc:
    """A registered command writing ``total`` bytes of stdout in 64 KiB writes."""

    async def spew(io: CommandIO) -> int:
        for start in range(0, total, OUTPUT_CHUNK):
            await io.write_stdout(b"x" * min(OUTPUT_CHUNK, total - start))
        return 0

    return spew


async def _read_until_exit(response: aiohttp.ClientResponse) -> int:
    """Bytes of output carried by the NDJSON stream; raises unless it ends with an exit frame."""
    buffer = b""
    output = 0
    last: dict[str, object] = {}
    async for chunk in response.content.iter_any():
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                last = json.loads(line)
                if last.get("type") == "data":
                    output += len(base64.b64decode(str(last["data_base64"])))
    if buffer.strip():
        last = json.loads(buffer)
    if last.get("type") != "exit":
        raise RuntimeError("the output stream ended without an exit frame")
    return output


async def _process_output(
    fake: FakeCreateOS, session: aiohttp.ClientSession, sandbox_id: str, argv: list[str]
) -> tuple[float, float, int]:
    """Seconds to read the output live, seconds to replay it after the exit, and its bytes."""
    base = f"{fake.api_url}/sandboxes/{sandbox_id}/processes"
    async with session.post(base, json={"cmd": argv[0], "args": argv[1:]}) as response:
        process_id = (await response.json())["data"]["process_id"]
    start = timer()
    async with session.post(f"{base}/{process_id}/stdin/close") as response:
        await response.read()
    async with session.get(f"{base}/{process_id}/connect", params={"after": "0"}) as response:
        size = await _read_until_exit(response)
    live = timer() - start
    start = timer()
    async with session.get(f"{base}/{process_id}/connect", params={"after": "0"}) as response:
        await _read_until_exit(response)
    return live, timer() - start, size


async def _unread_output(
    fake: FakeCreateOS, session: aiohttp.ClientSession, sandbox_id: str
) -> tuple[float, float]:
    """Seconds from ``stdin/close`` until ``/wait`` reports the exit, with nobody reading:
    the rate at which the process itself produces output (the bound for a live reader)."""
    base = f"{fake.api_url}/sandboxes/{sandbox_id}/processes"
    async with session.post(base, json={"cmd": "spew"}) as response:
        process_id = (await response.json())["data"]["process_id"]
    start = timer()
    async with session.post(f"{base}/{process_id}/stdin/close") as response:
        await response.read()
    async with session.get(f"{base}/{process_id}/wait") as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"wait_process answered HTTP {response.status}")
    return timer() - start, 0.0


async def _output_round(
    fake: FakeCreateOS,
    session: aiohttp.ClientSession,
    sandbox_id: str,
    argv: list[str],
    expected: int,
) -> tuple[float, float]:
    """Live and replay seconds of one run; raises unless all the output arrived."""
    live, replay, size = await _process_output(fake, session, sandbox_id, argv)
    if size != expected:
        raise RuntimeError("the process output arrived incomplete")
    return live, replay


async def run(rounds: int, file_bytes: int, output_bytes: int) -> Report:
    report = Report("bulk bytes: files API and process output", rounds)
    payload = os.urandom(file_bytes)
    async with serve_fake() as fake, aiohttp.ClientSession() as fake_session:
        fake_session.headers["X-Api-Key"] = fake.api_key
        fake.commands.register("spew", _spew(output_bytes))
        sandbox_id, _ = await fake_with_sandbox(fake, fake_session)
        fake_url = f"{fake.api_url}/sandboxes/{sandbox_id}/files"
        async with bare_server(bare_files_app()) as bare, aiohttp.ClientSession() as bare_session:
            bare_url = f"{bare.url}/v1/sandboxes/{sandbox_id}/files"
            await _round_trip(fake_session, fake_url, payload[:1024])
            await _round_trip(bare_session, bare_url, payload[:1024])
            files = await interleave_async(
                {
                    "fake": lambda: _round_trip(fake_session, fake_url, payload),
                    "bare": lambda: _round_trip(bare_session, bare_url, payload),
                },
                rounds,
            )
        async with fake_session.put(
            fake_url, params={"path": BIG_FILE}, data=b"y" * output_bytes
        ) as response:
            await response.read()
        cat = ["/bin/bash", "-lc", f"exec cat {BIG_FILE}"]
        outputs = await interleave_async(
            {
                "registered": lambda: _output_round(
                    fake, fake_session, sandbox_id, ["spew"], output_bytes
                ),
                "cat": lambda: _output_round(fake, fake_session, sandbox_id, cat, output_bytes),
                "unread": lambda: _unread_output(fake, fake_session, sandbox_id),
            },
            rounds,
        )
        live = [seconds for seconds, _ in outputs["registered"]]
        replay = [seconds for _, seconds in outputs["registered"]]
        cat_live = [seconds for seconds, _ in outputs["cat"]]
        unread = [seconds for seconds, _ in outputs["unread"]]
    fake_s, bare_s = median(files["fake"]), median(files["bare"])
    mib = file_bytes / MIB
    report.add("file size", mib, "MiB")
    report.add("fake upload+download", fake_s * 1e3, "ms")
    report.add("bare upload+download", bare_s * 1e3, "ms")
    report.add("fake throughput", 2 * file_bytes / fake_s / 1e6, "MB/s", "both directions")
    report.add("bare throughput", 2 * file_bytes / bare_s / 1e6, "MB/s", "both directions")
    live_mb_s = output_bytes / median(live) / 1e6
    report.add("process output", output_bytes / MIB, "MiB")
    report.add("output live", median(live) * 1e3, "ms", "stdin/close to exit frame")
    report.add("output live (bash cat)", median(cat_live) * 1e3, "ms", "the same via bash + cat")
    report.add("output, nobody reading", median(unread) * 1e3, "ms", "stdin/close to /wait")
    report.add("output replay", median(replay) * 1e3, "ms", "connect?after=0 once exited")
    report.add("output replay rate", output_bytes / median(replay) / 1e6, "MB/s")
    report.goal(
        "files: fake / bare throughput",
        bare_s / fake_s,
        FILE_GOAL_FRACTION,
        "x",
        higher_is_better=True,
    )
    report.goal("output live rate", live_mb_s, OUTPUT_GOAL_MB_S, "MB/s", higher_is_better=True)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=11)
    file_bytes = args.scale.pick(full=5 * MIB, smoke=64 * 1024, quick=5 * MIB)
    output_bytes = args.scale.pick(full=MIB, smoke=64 * 1024, quick=MIB)
    return finish(asyncio.run(run(args.rounds, file_bytes, output_bytes)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
