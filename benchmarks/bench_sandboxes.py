"""Benchmark: synchronous creates on the virtual clock, and fork of a sandbox holding 50 MiB.

A test creating 100 sandboxes through the official SDK (``createos-sandbox``, sync) against a
thread-mode fake as tests use it (``VirtualClock``, ``realistic`` transitions, so every create
waits its spawn time on the fake clock): goal under 1 s of wall time. The same
number of ``get_sandbox`` calls through the same client is the request floor, for the ratio;
the CPU time of the process (client and fake) is reported beside it, as wall time on a shared
machine mostly measures the load.

Fork of a paused sandbox holding 50 MiB in 50 files of 1 MiB: the ``POST …/fork`` request
alone (goal under 50 ms); beside it, copying the same files between two bare bashkit
filesystems (the floor of a copy, for the ratio).

Both again on a fake saving its state (``serve --state-dir``), side by side: persistence
costs at most 5% on the creates and 10% on the fork.

Run: ``python benchmarks/bench_sandboxes.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING, Any

import bashkit
from createos import Client, CreateSandboxRequest, ForkSandboxRequest, WaitOptions

from benchmarks._common import Report, finish, interleave, median, parse_args, timer
from benchmarks._servers import SHAPE, persist
from fake_server import FakeCreateOS, Step, TransitionPolicy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from createos.instance import SandboxInstance

__all__ = ["main", "run"]

CREATE_GOAL_S = 1.0
FORK_GOAL_MS = 50.0
#: A fake saving its state / the same fake in memory: creates and the fork.
PERSISTED_CREATES_GOAL = 1.05
PERSISTED_FORK_GOAL = 1.10
MIB = 1024 * 1024


def _creates(client: Client, count: int) -> tuple[float, float]:
    start, cpu = timer(), time.process_time()
    made = [client.create_sandbox(CreateSandboxRequest(shape=SHAPE)) for _ in range(count)]
    timed = timer() - start, time.process_time() - cpu
    for sandbox in made:  # untimed: rounds of creates would otherwise fill the fake (a 503 at
        sandbox.destroy()  # its capacity, about 325 live sandboxes under ulimit -n 1024)
    return timed


def _gets(client: Client, sandbox: SandboxInstance, count: int) -> tuple[float, float]:
    start, cpu = timer(), time.process_time()
    for _ in range(count):
        client.get_sandbox(sandbox.id)
    return timer() - start, time.process_time() - cpu


def _fork(source: SandboxInstance) -> float:
    start = timer()
    child = source.fork(ForkSandboxRequest(start_paused=True))
    elapsed = timer() - start
    child.destroy()
    return elapsed


def _bare_copy(files: int) -> float:
    source, target = bashkit.FileSystem(), bashkit.FileSystem()
    payload = bytes(range(256)) * (MIB // 256)
    for index in range(files):
        source.write_file(f"/f{index}", payload)
    start = timer()
    for index in range(files):
        target.write_file(f"/f{index}", source.read_file(f"/f{index}"))
    return timer() - start


def _prepared(fake: FakeCreateOS, stack: contextlib.ExitStack, files: int) -> tuple[Client, Any]:
    """A client of ``fake`` (started) and a paused sandbox holding ``files`` MiB."""
    stack.enter_context(fake)
    client = stack.enter_context(Client(fake.api_key, base_url=fake.url))
    first = client.create_sandbox(CreateSandboxRequest(shape=SHAPE))
    payload = bytes(range(256)) * (MIB // 256)
    for index in range(files):
        first.files.upload(f"/root/data/f{index}.bin", payload)
    first.pause().wait_until_paused(WaitOptions(timeout=60))
    return client, first


def run(rounds: int, creates: int, files: int) -> Report:
    report = Report(f"{creates} synchronous creates; fork of {files} MiB", rounds)
    # Realistic steps, but a pause done by the next request: the SDK polls on the wall clock.
    policy = TransitionPolicy.realistic().override(pausing=Step())
    with contextlib.ExitStack() as stack:
        fake = FakeCreateOS(transitions=policy)
        kept = FakeCreateOS(transitions=policy)
        persist(kept, stack)
        client, first = _prepared(fake, stack, files)
        kept_client, kept_first = _prepared(kept, stack, files)
        samples = interleave(
            {
                "creates": lambda: _creates(client, creates),
                "gets": lambda: _gets(client, first, creates),
                "fork": lambda: _fork(first),
                "bare copy": lambda: _bare_copy(files),
                "persisted creates": lambda: _creates(kept_client, creates),
                "persisted fork": lambda: _fork(kept_first),
            },
            rounds,
        )
        fake.reset()
        kept.reset()
    create_s = median([wall for wall, _ in samples["creates"]])
    get_s = median([wall for wall, _ in samples["gets"]])
    create_cpu = median([cpu for _, cpu in samples["creates"]])
    get_cpu = median([cpu for _, cpu in samples["gets"]])
    fork_ms, copy_ms = median(samples["fork"]) * 1e3, median(samples["bare copy"]) * 1e3
    report.add(f"{creates} creates (sync SDK, realistic transitions)", create_s, "s")
    report.add(f"{creates} get_sandbox (same client)", get_s, "s")
    report.add("creates / gets", create_s / get_s, "x")
    report.add(f"CPU of {creates} creates (client and fake)", create_cpu, "s")
    report.add("CPU: creates / gets", create_cpu / get_cpu, "x")
    report.add(f"fork of {files} MiB (the request)", fork_ms, "ms")
    report.add(f"bare bashkit copy of {files} MiB", copy_ms, "ms")
    report.add("fork / bare copy", fork_ms / copy_ms, "x")
    kept_create_s = median([wall for wall, _ in samples["persisted creates"]])
    kept_fork_ms = median(samples["persisted fork"]) * 1e3
    report.add(f"{creates} creates, persisted", kept_create_s, "s", "saving its state")
    report.add(f"fork of {files} MiB, persisted", kept_fork_ms, "ms", "saving its state")
    # The goals are stated for 100 creates and 50 MiB (a smoke run's figures mean nothing).
    report.goal("synchronous creates", create_s, CREATE_GOAL_S, "s", higher_is_better=False)
    report.goal("fork of a full sandbox", fork_ms, FORK_GOAL_MS, "ms", higher_is_better=False)
    report.goal(
        "creates: persisted / in memory", kept_create_s / create_s, PERSISTED_CREATES_GOAL, "x",
        higher_is_better=False,
    )  # fmt: skip
    report.goal(
        "fork: persisted / in memory", kept_fork_ms / fork_ms, PERSISTED_FORK_GOAL, "x",
        higher_is_better=False,
    )  # fmt: skip
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=5)
    creates = args.scale.pick(full=100, smoke=2, quick=50)
    files = args.scale.pick(full=50, smoke=1)
    return finish(run(args.rounds, creates, files), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
