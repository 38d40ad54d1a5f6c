"""Benchmark 7: the process runtime (real programs under bubblewrap) against bwrap alone.

* sandbox create: a fresh sandbox booting the cached devbox:1 image (its mount namespace,
  disk and overlay), its network namespace and ``eth0`` on the fake's router (goal < 30 ms
  once the router exists);
* ``exec true``: the runtime's ``run()`` (``nsenter`` into the sandbox's init) against
  starting ``bwrap … true`` directly with asyncio (the host's root as ``/``, no namespace
  entered first), interleaved (goal: within 1.5x);
* pause and resume of a sandbox running 10 processes (goal < 20 ms each);
* sandboxes alive at once: bytes of each sandbox's upper layer, the fake's own memory per
  idle sandbox (goal < 2 MiB), and the memory (PSS) of each sandbox's processes while every
  one of them runs ``sleep`` (the init's bwrap, pid 1 and its idle child, nsenter and the
  program).
* the sandbox's network namespace and ``eth0`` alone (part of create), and a preview URL's
  round trip (``GET`` through the preview port's ``/_ingress/…`` proxy to ``python3 -m http.server``
  in the sandbox) against the same request on a direct connection to the sandbox's ``eth0``
  (goal: within 5 ms).

Run: ``python benchmarks/bench_process.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from benchmarks._common import (
    Report,
    finish,
    growth_per,
    interleave_async,
    median,
    parse_args,
    rss_bytes,
    timer,
)
from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, tls_context
from fake_server.runtime.environment import BASE_ENV
from fake_server.runtime.pipes import StdinPipe
from fake_server.runtime.process import ProcessMachine, ProcessRuntime
from fake_server.runtime.process.net.netns import NetNamespace
from fake_server.runtime.process.sandbox import tree
from fake_server.runtime.process.sandbox.cmdline import bwrap_argv
from fake_server.runtime.process.storage.rootfs import SandboxRoot

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "run"]

CREATE_GOAL_MS = 30.0
#: ``exec true`` (nsenter into the sandbox's init) against a bare ``bwrap … true``.
EXEC_RATIO_GOAL = 1.5
PAUSE_GOAL_MS = 20.0
PREVIEW_OVERHEAD_GOAL_MS = 5.0
IDLE_MEMORY_GOAL_KIB = 2048.0


def _address(index: int) -> str:
    """A sandbox address for the benchmark's own sandboxes (the API would pick one)."""
    return f"10.250.{index // 250}.{index % 250 + 1}"


async def _nothing(data: bytes) -> None:
    pass


async def _runtime_true(machine: ProcessMachine, clock: VirtualClock) -> float:
    start = timer()
    await machine.runner(clock).run(["true"], on_stdout=_nothing, on_stderr=_nothing)
    return timer() - start


async def _bwrap_true(argv: list[str]) -> float:
    start = timer()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env={},
    )
    await proc.communicate()
    return timer() - start


def _du(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


async def _until_processes(machine: ProcessMachine, count: int) -> None:
    """Wait until the sandbox's trees hold ``count`` processes (real processes take real time)."""
    while True:
        found = sum(
            len(level) for run in machine.runs.values() for level in tree.descendants(run.pid)
        )
        if found >= count:
            return
        await asyncio.sleep(0.005)


async def _pause_resume(runtime: ProcessRuntime, clock: VirtualClock) -> tuple[float, float]:
    """Pause and resume times of a sandbox whose one process tree holds 10 processes."""
    machine = runtime.new_sandbox("paused")
    stdin = StdinPipe()
    script = "for i in 1 2 3 4 5 6 7 8; do sleep 300 & done; cat"  # sh, 8 sleeps, cat
    task = asyncio.ensure_future(
        machine.runner(clock).run(
            ["sh", "-c", script], stdin=stdin, on_stdout=_nothing, on_stderr=_nothing
        )
    )
    try:
        await _until_processes(machine, 10)
        start = timer()
        machine.pause()
        paused = timer() - start
        start = timer()
        machine.resume()
        resumed = timer() - start
    finally:
        for run in machine.runs.values():
            run.signal(signal.SIGKILL, tree_scope=True)
        await asyncio.gather(task, return_exceptions=True)
        machine.destroy()
    return paused, resumed


async def _direct_get(machine: ProcessMachine) -> float:
    start = timer()
    reader, writer = await asyncio.open_connection(sock=await machine.connect(8080))
    writer.write(b"GET / HTTP/1.1\r\nHost: sandbox\r\nConnection: close\r\n\r\n")
    await reader.read()
    writer.close()
    return timer() - start


async def _preview(requests: int) -> tuple[float, float]:
    """Median preview round trip and direct in-namespace round trip, in seconds."""
    fake = FakeCreateOS(
        clock=VirtualClock(), transitions=TransitionPolicy.immediate(), runtime="process"
    )
    async with (
        fake,
        httpx.AsyncClient(
            base_url=fake.url,
            headers={"X-Api-Key": fake.api_key},
            timeout=30,
            verify=tls_context(),
        ) as client,
    ):
        body = {"shape": "s-1vcpu-1gb", "ingress_enabled": True}
        sandbox_id = (await client.post("/v1/sandboxes", json=body)).json()["data"]["id"]
        for _ in range(10):  # immediate transitions: running on the next read
            got = await client.get(f"/v1/sandboxes/{sandbox_id}")
            if got.json()["data"]["status"] == "running":
                break
        server = {"cmd": "python3", "args": ["-m", "http.server", "8080", "--directory", "/etc"]}
        await client.post(f"/v1/sandboxes/{sandbox_id}/processes", json=server)
        url = f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/hostname"
        for _ in range(2000):  # the server starts in real time (about 100 ms)
            if (await client.get(url)).status_code != 502:
                break
            await asyncio.sleep(0.01)
        machine = fake.sandbox(sandbox_id).machine
        assert isinstance(machine, ProcessMachine)
        proxied, direct = [], []
        for _ in range(requests):
            start = timer()
            await client.get(url)
            proxied.append(timer() - start)
            direct.append(await _direct_get(machine))
    return median(proxied), median(direct)


def _netns_create(runtime: ProcessRuntime, count: int) -> float:
    """A namespace with ``eth0`` on the router, and its removal."""
    network, times = runtime.network(), []
    for index in range(count):
        start = timer()
        namespace = NetNamespace()
        link = network.plug(namespace, f"n{index}", _address(index))
        network.unplug(link)
        namespace.close()
        times.append(timer() - start)
    return median(times)


def _rootfs_create(runtime: ProcessRuntime, base: Path, count: int) -> float:
    """A sandbox's root file system alone (mount namespace, disk image, overlay), and its
    release."""
    times = []
    for index in range(count):
        start = timer()
        SandboxRoot(runtime.images(), base / f"r{index}", 10240, None).close()
        times.append(timer() - start)
    return median(times)


def _upper_bytes(machine: ProcessMachine) -> int:
    """Bytes of what the sandbox changed (its upper layer; its directory on the layout)."""
    if machine.rootfs is None:
        return _du(machine.root)
    fd = machine.rootfs.open_upper()
    try:
        return _du(Path(f"/proc/self/fd/{fd}"))
    finally:
        os.close(fd)


def _pss(pid: int) -> int:
    """A process's proportional set size in bytes (shared pages split among their users)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


async def _alive(
    runtime: ProcessRuntime, clock: VirtualClock, count: int
) -> tuple[float, float, float]:
    """Disk and fake memory per idle sandbox, then process memory per sandbox running sleep."""
    before = rss_bytes()
    machines = [runtime.new_sandbox(f"alive{index}") for index in range(count)]
    for index, machine in enumerate(machines):
        machine.set_address(_address(index))
    fake_bytes = growth_per(before, rss_bytes(), count)
    disk = median([_upper_bytes(m) for m in machines])
    tasks = [
        asyncio.ensure_future(
            m.runner(clock).run(["sleep", "300"], on_stdout=_nothing, on_stderr=_nothing)
        )
        for m in machines
    ]
    try:
        for machine in machines:
            await _until_processes(machine, 1)
        pids = [
            pid
            for m in machines
            for pid in [
                *(run.pid for run in m.runs.values()),  # nsenter
                *m.guest.host_pids(),  # bwrap, pid 1, its sleep
                *m.guest.processes([run.pid for run in m.runs.values()]),
            ]
        ]
        process_bytes = sum(_pss(pid) for pid in pids) / count
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for machine in machines:
            machine.destroy()
    return disk, fake_bytes, process_bytes


async def run(rounds: int, creates: int, execs: int, alive: int) -> Report:
    report = Report(
        "process runtime: sandbox create, exec true vs bwrap, pause/resume, preview", rounds
    )
    clock = VirtualClock()
    with tempfile.TemporaryDirectory() as base:
        runtime = ProcessRuntime(base=Path(base))
        try:
            runtime.network()  # the router: made once per fake, outside the measurement
            create_times = []
            for index in range(creates):
                start = timer()
                made = runtime.new_sandbox(f"c{index}")
                made.set_address(_address(index))
                made.destroy()
                create_times.append(timer() - start)
            machine = runtime.new_sandbox("exec")
            argv = [*bwrap_argv(runtime.bwrap, "/", "/", BASE_ENV, image=True), "true"]
            await _runtime_true(machine, clock)  # first-use costs outside the measurement

            async def runtime_batch() -> float:
                return median([await _runtime_true(machine, clock) for _ in range(execs)])

            async def bwrap_batch() -> float:
                return median([await _bwrap_true(argv) for _ in range(execs)])

            samples = await interleave_async(
                {"runtime": runtime_batch, "bwrap": bwrap_batch}, rounds
            )
            pauses = [await _pause_resume(runtime, clock) for _ in range(rounds)]
            disk, fake_bytes, process_bytes = await _alive(runtime, clock, alive)
            netns_ms = _netns_create(runtime, creates) * 1e3
            rootfs_ms = _rootfs_create(runtime, Path(base), creates) * 1e3
        finally:
            runtime.close()
            clock.close()
    preview_s, direct_s = await _preview(execs * 2)
    create_ms = median(create_times) * 1e3
    runtime_ms, bwrap_ms = median(samples["runtime"]) * 1e3, median(samples["bwrap"]) * 1e3
    pause_ms = median([p for p, _ in pauses]) * 1e3
    resume_ms = median([r for _, r in pauses]) * 1e3
    report.add("sandbox create (with its network namespace and eth0)", create_ms, "ms")
    report.add("network namespace with eth0, made and removed", netns_ms, "ms")
    report.add("root file system (disk image, image overlay), made and released", rootfs_ms, "ms")
    report.add("preview GET round trip", preview_s * 1e3, "ms")
    report.add("same GET on a direct connection to eth0", direct_s * 1e3, "ms")
    report.add("exec true (runtime)", runtime_ms, "ms")
    report.add("bwrap true (direct)", bwrap_ms, "ms")
    report.add("pause, 10 processes", pause_ms, "ms")
    report.add("resume, 10 processes", resume_ms, "ms")
    report.add("sandboxes alive", alive, "sandboxes")
    report.add("upper layer per sandbox", disk / 1024, "KiB")
    report.add("runtime memory per idle sandbox", fake_bytes / 1024, "KiB")
    report.add("process memory per sandbox running sleep (PSS)", process_bytes / 1024, "KiB")
    report.goal("sandbox create", create_ms, CREATE_GOAL_MS, "ms", higher_is_better=False)
    report.goal(
        "exec true over bwrap",
        runtime_ms / bwrap_ms,
        EXEC_RATIO_GOAL,
        "x",
        higher_is_better=False,
    )
    report.goal(
        "preview over a direct connection",
        max(0.0, (preview_s - direct_s) * 1e3),
        PREVIEW_OVERHEAD_GOAL_MS,
        "ms",
        higher_is_better=False,
    )
    report.goal("pause", pause_ms, PAUSE_GOAL_MS, "ms", higher_is_better=False)
    report.goal("resume", resume_ms, PAUSE_GOAL_MS, "ms", higher_is_better=False)
    report.goal(
        "fake memory per idle sandbox",
        fake_bytes / 1024,
        IDLE_MEMORY_GOAL_KIB,
        "KiB",
        higher_is_better=False,
    )
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=5)
    creates = args.scale.pick(full=50, smoke=2)
    execs = args.scale.pick(full=20, smoke=2)
    alive = args.scale.pick(full=100, smoke=3)
    return finish(asyncio.run(run(args.rounds, creates, execs, alive)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
