"""Soak: ``createos-fake serve`` returns to its baseline after every wave of VM-style work.

Starts ``serve`` (process runtime by default) as a subprocess and drives it over HTTP in
waves. Each wave creates sandboxes and uses them as the service's devboxes are used: execs,
a daemon started with ``nohup setsid ... &``, a managed process left running, files up and
down, pause and resume, a fork, an account network, a disk where the runtime mounts them, and
an armed fault that must fire; then destroys everything. After each wave it waits (bounded,
in real time) for the server to settle and compares what the server holds with the baseline
taken after a warm-up wave: open fds, processes under it, mounts, network namespaces, its
network links on the host and the runtime's sandbox directories must be back exactly; RSS may
grow by ``RSS_BOUND``. Exits 1 on the first wave that does not return, naming what grew.

    python -m benchmarks.soak [--waves 20] [--sandboxes 8] [--runtime process|bashkit]

``tests/test_soak.py`` runs a short version in CI, under ``ulimit -n 1024``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from benchmarks import _serve
from fake_server.runtime.process.net.router import host_link_prefix

if TYPE_CHECKING:
    from benchmarks._serve import Serve

#: RSS growth allowed after the warm-up wave (allocator arenas, caches).
RSS_BOUND = 32 << 20
#: Real seconds a wave's leftovers may take to go (processes reaped, namespaces released).
SETTLE = 20.0
KEY = "cos_soak_0123456789abcdef"
DAEMON = "nohup setsid sleep 1000 >/dev/null 2>&1 &"


@dataclass(frozen=True)
class Holdings:
    """What the server holds; every field but ``rss`` must come back to at most its baseline."""

    fds: int
    processes: int
    mounts: int
    netns: int
    links: int
    dirs: int
    rss: int

    def grown(self, baseline: Holdings) -> list[str]:
        grew = [
            f"{f.name} {getattr(baseline, f.name)} -> {getattr(self, f.name)}"
            for f in fields(self)
            if f.name != "rss" and getattr(self, f.name) > getattr(baseline, f.name)
        ]
        if self.rss - baseline.rss > RSS_BOUND:
            grew.append(f"rss +{(self.rss - baseline.rss) >> 20} MiB")
        return grew


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def _descendants(pid: int) -> list[int]:
    tree, found, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _links(path: str) -> list[str]:
    try:
        names = os.listdir(path)
    except OSError:
        return []
    found = []
    for name in names:
        try:
            found.append(os.readlink(f"{path}/{name}"))
        except OSError:
            continue
    return found


def holdings(pid: int, root: Path | None) -> Holdings:
    """Read what process ``pid`` and its descendants hold, from ``/proc`` and ``/sys``;
    ``dirs`` counts the entries of the runtime's directory (one per fake) under ``root``;
    ``links`` the host's network links of that fake alone (other fakes may run meanwhile)."""
    own_links = host_link_prefix(pid)
    descendants = _descendants(pid)
    netns = {link for link in _links(f"/proc/{pid}/fd") if link.startswith("net:")}
    for child in descendants:
        try:
            netns.add(os.readlink(f"/proc/{child}/ns/net"))
        except OSError:
            continue
    with open(f"/proc/{pid}/statm") as statm:
        rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    with open(f"/proc/{pid}/mountinfo") as mountinfo:
        mounts = sum(1 for _ in mountinfo)
    dirs = sum(len(os.listdir(top)) for top in root.glob("*/")) if root is not None else 0
    return Holdings(
        fds=len(os.listdir(f"/proc/{pid}/fd")),
        processes=len(descendants),
        mounts=mounts,
        netns=len(netns),
        links=sum(1 for name in os.listdir("/sys/class/net") if name.startswith(own_links)),
        dirs=dirs,
        rss=rss,
    )


def start_serve(runtime: str, tmp: str) -> Serve:
    """``serve`` on a free port, its temporary directories under ``tmp``."""
    try:
        served = _serve.start_serve(
            "--transitions", "immediate", "--rate-limit", "off", "--runtime", runtime,
            "--api-key", KEY, env=dict(os.environ, TMPDIR=tmp), capture_stderr=False,
        )  # fmt: skip
    except RuntimeError as exc:
        raise SystemExit(f"soak: {exc}") from None
    for line in served.lines:
        if line.startswith("runtime:"):
            print(line, flush=True)
    return served


def _ok(reply: httpx.Response, *expected: int) -> dict[str, Any]:
    if reply.status_code not in (expected or (200, 201, 202)):
        raise SystemExit(
            f"soak: {reply.request.method} {reply.request.url.path} answered {reply.status_code}"
        )
    body: dict[str, Any] = reply.json() if reply.content else {}
    return body.get("data", body) if isinstance(body, dict) else {}


def _running(client: httpx.Client, sandbox: str) -> None:
    for _ in range(200):
        if _ok(client.get(sandbox))["status"] == "running":
            return
        time.sleep(0.05)
    raise SystemExit(f"soak: {sandbox} never came back to running")


def wave(
    client: httpx.Client, control: httpx.Client, count: int, index: int, peak: Any
) -> list[str]:
    """One wave; returns notes on what the runtime does not offer (unsupported, not failed).

    ``peak()`` is called once everything of the wave exists, before it is destroyed.
    """
    notes: list[str] = []
    sandboxes = []
    for _ in range(count):
        created = _ok(client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}))
        sandboxes.append(f"/v1/sandboxes/{created['id']}")
    network = _ok(client.post("/v1/networks", json={"name": f"soak-{index}"}))["id"]
    for number, sandbox in enumerate(sandboxes):
        result = _ok(
            client.post(sandbox + "/exec", json={"cmd": "sh", "args": ["-c", f"echo {number}"]})
        )
        if result["result"]["stdout"] != f"{number}\n":
            raise SystemExit(f"soak: exec in {sandbox} printed {result['result']['stdout']!r}")
        _ok(client.post(sandbox + "/exec", json={"cmd": "sh", "args": ["-c", DAEMON]}))
        _ok(client.post(sandbox + "/processes", json={"cmd": "sleep", "args": ["1000"]}), 201)
        payload = os.urandom(4096)
        _ok(client.put(sandbox + "/files", params={"path": "/tmp/blob"}, content=payload))
        if client.get(sandbox + "/files", params={"path": "/tmp/blob"}).content != payload:
            raise SystemExit(f"soak: a file of {sandbox} came back changed")
        _ok(client.post(sandbox + "/pause"))
        _ok(client.post(sandbox + "/resume"))
        _running(client, sandbox)
    member = sandboxes[-1]
    joined = client.post(member + "/networks", json={"id": network})
    if joined.status_code == 409:
        notes.append("account networks unsupported on this runtime")
    else:
        _ok(joined)
    _ok(client.post(sandboxes[0] + "/pause"))  # only a paused sandbox forks
    child = _ok(client.post(sandboxes[0] + "/fork", json={}))["id"]
    _running(client, f"/v1/sandboxes/{child}")
    sandboxes.append(f"/v1/sandboxes/{child}")
    _ok(
        control.post(
            "/_fake/faults",
            json={
                "operation": "exec",
                "action": {"type": "http_error", "status": 503},
                "times": 1,
            },
        )
    )
    failed = client.post(sandboxes[-1] + "/exec", json={"cmd": "true"})
    if failed.status_code != 503:
        raise SystemExit(f"soak: the armed fault did not fire ({failed.status_code})")
    peak()
    if joined.status_code != 409:
        _ok(client.delete(f"{member}/networks/{network}"))
    for sandbox in sandboxes:
        _ok(client.delete(sandbox))
    _ok(client.delete(f"/v1/networks/{network}"))
    return notes


def settle(pid: int, root: Path | None, baseline: Holdings) -> list[str]:
    """Wait (bounded) for the server to hold no more than at the baseline; what still grew."""
    deadline = time.monotonic() + SETTLE
    last: list[str] = []
    while True:
        grown = holdings(pid, root).grown(baseline)
        if grown != last and os.environ.get("SOAK_VERBOSE"):
            print(f"  settling: {', '.join(grown) or 'done'}", flush=True)
        last = grown
        if not grown or time.monotonic() > deadline:
            return grown
        time.sleep(0.1)


def soak(waves: int, count: int, runtime: str) -> int:
    with tempfile.TemporaryDirectory(prefix="createos-soak-") as tmp:
        served = start_serve(runtime, tmp)
        url, control_key, pid = served.origin, served.control_key, served.process.pid
        try:
            headers = {"X-Api-Key": KEY}
            with (
                httpx.Client(base_url=url, headers=headers, timeout=60) as client,
                httpx.Client(
                    base_url=url, headers={"X-Fake-Control-Key": control_key}, timeout=60
                ) as control,
            ):
                root = Path(tmp, "createos-fake-process")
                peaks: list[Holdings] = []

                def peak() -> None:
                    peaks.append(holdings(pid, root))

                notes = wave(client, control, count, 0, peak)  # warm-up: imports, caches
                time.sleep(0.5)
                baseline = holdings(pid, root)
                print(f"baseline after warm-up: {baseline}", flush=True)
                for note in sorted(set(notes)):
                    print(f"note: {note}", flush=True)
                for index in range(1, waves + 1):
                    started = time.monotonic()
                    wave(client, control, count, index, peak)
                    grown = settle(pid, root, baseline)
                    top = peaks[-1]
                    print(
                        f"wave {index:3d}: {time.monotonic() - started:5.1f}s; at its peak "
                        f"{top.processes} processes, {top.netns} netns, {top.mounts} mounts, "
                        f"{top.links} links, {top.dirs} dirs, {top.fds} fds, "
                        f"rss {top.rss >> 20} MiB; then back to baseline",
                        flush=True,
                    )
                    if grown:
                        print(f"GREW after wave {index}: {', '.join(grown)}", flush=True)
                        return 1
        finally:
            try:
                served.stop(signal.SIGTERM)
            except subprocess.TimeoutExpired:
                served.kill()
    print("flat")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", type=int, default=20)
    parser.add_argument("--sandboxes", type=int, default=8)
    parser.add_argument("--runtime", choices=("process", "bashkit"), default="process")
    args = parser.parse_args(argv)
    return soak(args.waves, args.sandboxes, args.runtime)


if __name__ == "__main__":
    sys.exit(main())
