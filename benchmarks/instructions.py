"""Instructions per operation under callgrind, for any commit: where a per-test cost went.

Wall and CPU time on a shared machine move with its load; the number of instructions an
operation executes does not. Each probe runs a fresh interpreter under
``valgrind --tool=callgrind`` twice, doing the operation ``--few`` and then ``--many`` times
after the same set-up, and reports the difference of the two totals over the difference of
the counts, so imports and set-up cancel out. Probes:

* ``start_stop``: an in-loop ``FakeCreateOS`` (virtual clock, immediate transitions) entered
  and left;
* ``lease``: what a ``createos_lease`` test does to the session fake: ``fake.reset()``, then
  the plugin's lease provider acquiring and destroying a lease through the background loop;
* ``ready``: a worker's first fake (``Session(Options()).fake``: start and warm-up) in a
  fresh process, against the same process without it (``--few``/``--many`` do not apply);
* ``h1_request``, ``h2_request``: ``get_sandbox`` as ``bench_http2`` sends it, httpx to the
  in-loop fake with 8 requests in flight, over HTTP/1.1 (8 connections) or HTTP/2 (one):
  client and fake together, so their ratio is the benchmark's goal without the machine.

Each commit is checked out (``git worktree add --detach``) into a temporary directory and
imported from there (``PYTHONPATH``); ``PYTHONHASHSEED=0`` keeps dict and set order alike.

Run: ``python benchmarks/instructions.py [--probe NAME ...] [COMMIT ...]`` (default: the
working tree, every probe). It takes about a minute per probe and commit.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["PROBES", "instructions", "main"]

ROOT = Path(__file__).resolve().parents[1]

_START_STOP = """
import asyncio, sys
from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock

async def main(count):
    clock = VirtualClock()
    for _ in range(3 + count):
        async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()):
            pass
    clock.close()

asyncio.run(main(int(sys.argv[1])))
"""

_LEASE = """
import sys
from pytest_createos._options import Options
from pytest_createos._session import Session
from pytest_createos.provider import Environment

session = Session(Options())
fake = session.fake
provider = session.lease_provider(live=False)

async def lease(env):
    acquired = await provider.acquire_lease(env)
    await provider.destroy_lease(env, acquired.provider_lease_id, acquired.metadata)

for _ in range(3 + int(sys.argv[1])):
    fake.reset()
    env = Environment(
        company_id="pytest-createos",
        environment_id="pytest-createos-env",
        config={"apiUrl": fake.url, "apiKey": fake.api_key, "shape": "s-1vcpu-1gb",
                "reuseLease": False},
    )
    session.bridge.run(lease(env), timeout=60)
session.close()
"""

_READY = """
import sys
from pytest_createos._options import Options
from pytest_createos._session import Session

session = Session(Options())
if int(sys.argv[1]):
    session.fake
session.close()
"""

_REQUEST = """
import asyncio, sys
import aiohttp, httpx
from benchmarks._servers import fake_with_sandbox, serve_fake
from benchmarks.bench_http2 import IN_FLIGHT, _rate

async def main(count):
    async with serve_fake() as fake, aiohttp.ClientSession() as session:
        session.headers["X-Api-Key"] = fake.api_key
        sandbox_id, _ = await fake_with_sandbox(fake, session)
        url = f"{fake.api_url}/sandboxes/{sandbox_id}"
        limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
        options = {"http1": False, "http2": True} if HTTP2 else {"limits": limits}
        async with httpx.AsyncClient(headers={"X-Api-Key": fake.api_key}, **options) as client:
            await _rate(client, url, 8 * IN_FLIGHT, IN_FLIGHT)
            await _rate(client, url, count, IN_FLIGHT)

asyncio.run(main(int(sys.argv[1])))
"""

#: name -> (script, few, many): the operation runs ``few`` and ``many`` times.
PROBES: dict[str, tuple[str, int, int]] = {
    "start_stop": (_START_STOP, 5, 25),
    "lease": (_LEASE, 3, 13),
    "ready": (_READY, 0, 1),
    "h1_request": ("HTTP2 = False" + _REQUEST, 100, 300),
    "h2_request": ("HTTP2 = True" + _REQUEST, 100, 300),
}

_COLLECTED = re.compile(r"Collected : (\d+)")


def _valgrind() -> str:
    found = shutil.which("valgrind")
    if found is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    return found


def _total(checkout: Path, script: str, count: int) -> int:
    """Instructions one run of ``script`` executed (every thread), as callgrind counts."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    command = [
        _valgrind(), "--tool=callgrind", "--callgrind-out-file=/dev/null",
        sys.executable, "-c", script, str(count),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        tail = "\n".join(done.stderr.splitlines()[-15:])
        raise RuntimeError(f"the probe failed under callgrind:\n{tail}")
    return int(found.group(1))


def instructions(checkout: Path, probe: str) -> float:
    """Instructions per operation of ``probe`` in ``checkout``."""
    script, few, many = PROBES[probe]
    return (_total(checkout, script, many) - _total(checkout, script, few)) / (many - few)


@contextlib.contextmanager
def _checkout(commit: str | None) -> Iterator[Path]:
    """The working tree (``None``), or ``commit`` checked out in a temporary worktree."""
    if commit is None:
        yield ROOT
        return
    with tempfile.TemporaryDirectory(prefix="instructions-") as folder:
        tree = Path(folder) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), commit],
            check=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("commits", nargs="*", help="commits (default: the working tree)")
    parser.add_argument("--probe", action="append", choices=sorted(PROBES), default=None)
    args = parser.parse_args(argv)
    probes = args.probe or list(PROBES)
    print("| commit | " + " | ".join(f"{p} (M instructions)" for p in probes) + " |")
    print("|---" * (len(probes) + 1) + "|")
    for commit in args.commits or [None]:
        with _checkout(commit) as tree:
            cells = []
            for probe in probes:
                try:
                    cells.append(f"{instructions(tree, probe) / 1e6:.2f}")
                except RuntimeError as exc:
                    print(f"{commit or 'working tree'} {probe}: {exc}", file=sys.stderr)
                    cells.append("-")
        print(f"| {commit or 'working tree'} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
