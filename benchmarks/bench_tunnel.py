"""Benchmark: throughput through ``POST …/tunnel/{port}`` against a direct connection to the
same server (the socket the fake itself opens into the sandbox's network namespace).

One process-runtime sandbox runs a sink that reads the announced number of bytes and answers
the count; each round sends ``mib`` MiB each way, interleaved. Goal: the tunnel at least half
the direct connection's rate.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import httpx

from benchmarks._common import Report, finish, interleave_async, median, parse_args, timer
from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.clock import RealClock

if TYPE_CHECKING:
    from collections.abc import Sequence

SINK = (
    "import socket\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 7000)); s.listen()\n"
    "while True:\n"
    "    c, _ = s.accept(); want = int(c.recv(16) or 0); n = 0\n"
    "    while n < want and (d := c.recv(1 << 20)): n += len(d)\n"
    "    c.sendall(str(n).encode()); c.close()\n"
)
_BLOCK = b"x" * (1 << 20)


async def _send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, mib: int) -> float:
    start = timer()
    writer.write(str(mib << 20).encode().ljust(16))  # the count: no half-close needed
    for _ in range(mib):
        writer.write(_BLOCK)
        await writer.drain()
    answer = await reader.read()
    elapsed = timer() - start
    writer.close()
    assert int(answer) == mib << 20, answer
    return (mib << 20) / elapsed / 1e6


async def _tunnel(fake: FakeCreateOS, box: str, mib: int) -> float:
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    writer.write(
        f"POST /v1/sandboxes/{box}/tunnel/7000 HTTP/1.1\r\nHost: {fake.host}\r\n"
        f"X-Api-Key: {fake.api_key}\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n".encode()
    )
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
    return await _send(reader, writer, mib)


async def _direct(fake: FakeCreateOS, box: str, mib: int) -> float:
    sock = await fake.sandbox(box).machine.connect(7000)
    reader, writer = await asyncio.open_connection(sock=sock)
    return await _send(reader, writer, mib)


async def run(rounds: int, mib: int) -> Report:
    report = Report("tunnel: throughput through POST …/tunnel/{port} vs a direct socket", rounds)
    fake = FakeCreateOS(
        clock=RealClock(),
        transitions=TransitionPolicy.immediate(),
        runtime="process",
        rate_limit=None,
    )
    async with fake:
        async with httpx.AsyncClient(
            base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=60
        ) as client:
            box = (await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()
            box_id = box["data"]["id"]
            await client.post(
                f"/v1/sandboxes/{box_id}/processes", json={"cmd": "python3", "args": ["-c", SINK]}
            )
            for _ in range(2000):  # the sink decides when it listens (bounded)
                try:
                    (await fake.sandbox(box_id).machine.connect(7000)).close()
                    break
                except OSError:
                    await asyncio.sleep(0.01)
            samples = await interleave_async(
                {
                    "tunnel": lambda: _tunnel(fake, box_id, mib),
                    "direct": lambda: _direct(fake, box_id, mib),
                },
                rounds,
            )
            await client.delete(f"/v1/sandboxes/{box_id}")
    tunnel, direct = median(samples["tunnel"]), median(samples["direct"])
    report.add("throughput: tunnel", tunnel, "MB/s", f"{mib} MiB per round")
    report.add("throughput: direct socket", direct, "MB/s", "the fake's own connection")
    report.goal("tunnel / direct throughput", tunnel / direct, 0.5, "x", higher_is_better=True)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=5)
    mib = args.scale.pick(full=64, smoke=2)
    return finish(asyncio.run(run(args.rounds, mib)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
