"""Benchmark: desktop screenshots and a persistent disk shared by many sandboxes.

Times ``GET /computer/screenshot`` of a 1280×800 desktop with two open windows over loopback
HTTP, and rendering plus PNG encoding alone (goal: a screenshot under 20 ms). Then attaches
one disk to 10 sandboxes, writes 1 MiB through the files API in one of them and reads it back
in every other: the goal is that every sandbox mounts the very same bucket store (0 copies),
with the median read time for information.

Run: ``python benchmarks/bench_resources.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import aiohttp

from benchmarks._common import Report, finish, median, parse_args, timer
from benchmarks._servers import SHAPE, serve_fake
from fake_server.models.resources.desktop_render import screenshot

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fake_server import FakeCreateOS

__all__ = ["main", "run"]

SCREENSHOT_GOAL_MS = 20.0
SHARERS = 10
PAYLOAD = 1024 * 1024


async def _sandbox(session: aiohttp.ClientSession, fake: FakeCreateOS, **body: object) -> str:
    async with session.post(f"{fake.api_url}/sandboxes", json={"shape": SHAPE, **body}) as made:
        sandbox_id = str((await made.json())["data"]["id"])
    async with session.get(f"{fake.api_url}/sandboxes/{sandbox_id}") as response:
        await response.read()
    return sandbox_id


async def _screenshots(
    session: aiohttp.ClientSession, fake: FakeCreateOS, shots: int
) -> tuple[float, float]:
    sandbox_id = await _sandbox(session, fake, rootfs="desktop:1")
    computer = f"{fake.api_url}/sandboxes/{sandbox_id}/computer"
    for body in ({"target": "https://example.com"}, {"application": "xterm"}):
        action = "open" if "target" in body else "launch"
        async with session.post(f"{computer}/{action}", json=body) as response:
            await response.read()
    http_times, render_times = [], []
    account = fake.world.account_for_key(fake.api_key)
    assert account is not None
    desktop = account.resources.desktops[sandbox_id]
    for _ in range(shots):
        start = timer()
        async with session.get(f"{computer}/screenshot") as response:
            png = await response.read()
        http_times.append(timer() - start)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        start = timer()
        screenshot(desktop, desktop.screens[0])
        render_times.append(timer() - start)
    return median(http_times), median(render_times)


async def _shared_disk(
    session: aiohttp.ClientSession, fake: FakeCreateOS
) -> tuple[int, float, int]:
    """Distinct bucket stores behind the mounts, median read time, readers that saw it."""
    disk = {
        "name": "shared",
        "config": {"bucket": "bench", "endpoint": "https://s3.bench"},
        "credentials": {"access_key": "a", "secret_key": "s"},
    }
    async with session.post(f"{fake.api_url}/disks", json=disk) as made:
        disk_id = (await made.json())["data"]["id"]
    attach = [{"disk_id": disk_id, "mount_path": "/mnt/shared"}]
    ids = [await _sandbox(session, fake, disks=attach) for _ in range(SHARERS)]
    payload = bytes(range(256)) * (PAYLOAD // 256)
    url = f"{fake.api_url}/sandboxes/{ids[0]}/files"
    async with session.put(url, params={"path": "/mnt/shared/blob"}, data=payload) as response:
        await response.read()
    reads, seen = [], 0
    for other in ids[1:]:
        start = timer()
        async with session.get(
            f"{fake.api_url}/sandboxes/{other}/files", params={"path": "/mnt/shared/blob"}
        ) as response:
            data = await response.read()
        reads.append(timer() - start)
        seen += data == payload
    stores = {id(fake.sandbox(s).disk.mounts["/mnt/shared"]) for s in ids}
    return len(stores), median(reads), seen


async def run(rounds: int, shots: int) -> Report:
    report = Report("desktop screenshots and a disk shared by 10 sandboxes", rounds)
    http_ms, render_ms, reads = [], [], []
    stores, seen = 0, 0
    for _ in range(rounds):
        async with serve_fake() as fake, aiohttp.ClientSession() as session:
            session.headers["X-Api-Key"] = fake.api_key
            http, render = await _screenshots(session, fake, shots)
            http_ms.append(http * 1e3)
            render_ms.append(render * 1e3)
            stores, read, seen = await _shared_disk(session, fake)
            reads.append(read * 1e3)
    report.add("screenshot 1280x800 over HTTP", median(http_ms), "ms")
    report.add("render + PNG encode alone", median(render_ms), "ms")
    report.add("1 MiB read from the shared disk", median(reads), "ms", f"{seen} of 9 readers")
    report.add("bucket stores behind 10 mounts", stores, "stores")
    report.goal(
        "screenshot 1280x800", median(http_ms), SCREENSHOT_GOAL_MS, "ms", higher_is_better=False
    )
    report.goal("copies for 10 sharers", stores - 1, 0, "copies", higher_is_better=False)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=5)
    shots = args.scale.pick(full=20, smoke=2)
    return finish(asyncio.run(run(args.rounds, shots)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
