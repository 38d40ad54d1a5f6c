"""Benchmark 15: the process runtime's confinement on bwrap against an OCI runtime (runc, crun).

The same confinement both ways (a user namespace of 65,536 ids, PID/IPC/UTS/mount
namespaces, the OCI masked and read-only paths, memory, CPU and pids cgroups, a seccomp filter
refusing the same system calls), measured side by side, interleaved:

* start: a sandbox's init, from nothing to running (this runtime: the user namespace handed
  over and mapped, bwrap's init; an OCI runtime: ``run --detach`` of a bundle);
* ``exec true`` in it (this runtime: the filter's bwrap, then ``nsenter``; an OCI runtime:
  its ``exec``).

An OCI runtime that is not installed, or fails on this host (crun 1.8 refuses a host with
cgroup v1 and v2 both mounted: "cgroups in hybrid mode not supported"), is reported with why
instead of figures. Informational: no goal (docs/benchmarks.md, "Containment", says what was
chosen and why).

Run: ``python benchmarks/bench_oci.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks._common import Report, finish, interleave, median, parse_args, timer
from fake_server import VirtualClock
from fake_server.runtime.process import ProcessRuntime
from fake_server.runtime.process.containment import confine, idmap, seccomp
from fake_server.runtime.process.storage.rootdir import public_temp

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["main", "run"]


async def _nothing(data: bytes) -> None:
    pass


def _spec(root: Path, ids: idmap.IdRange) -> dict[str, object]:
    """An OCI config with this runtime's confinement (``runc spec``'s defaults otherwise)."""
    denied = [name for name in seccomp.DENIED if name != "clone3"]
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": ["sleep", "2147483647"],
            "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
            "cwd": "/",
            "noNewPrivileges": True,
        },
        "root": {"path": str(root), "readonly": True},
        "hostname": "sandbox",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
        ],
        "linux": {
            "namespaces": [{"type": name} for name in ("pid", "ipc", "uts", "mount", "user")],
            "uidMappings": [{"containerID": 0, "hostID": ids.base, "size": ids.size}],
            "gidMappings": [{"containerID": 0, "hostID": ids.base, "size": ids.size}],
            "resources": {
                "memory": {"limit": 1 << 30},
                "cpu": {"quota": 100_000, "period": 100_000},
                "pids": {"limit": 1024},
            },
            "maskedPaths": list(confine.MASKED),
            "readonlyPaths": list(confine.READ_ONLY),
            "seccomp": {
                "defaultAction": "SCMP_ACT_ALLOW",
                "syscalls": [{"names": denied, "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
            },
        },
    }


class _Oci:
    """One OCI runtime driving bundles in a temporary directory."""

    def __init__(self, program: str, base: Path, ids: idmap.IdRange, root: Path) -> None:
        self.program = program
        self.base = base
        self.ids = ids
        self.root = root
        self.count = 0
        self.live: list[str] = []

    def _call(self, *args: str) -> None:
        # stdio to /dev/null and a file: a detached container keeps a pipe open for ever
        with tempfile.TemporaryFile() as errors:
            done = subprocess.run(
                [self.program, "--root", str(self.base / "state"), *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                check=False,
                timeout=60,
            )
            if done.returncode != 0:
                errors.seek(0)
                text = errors.read().decode(errors="replace").strip().splitlines()
                raise RuntimeError(text[-1][-200:] if text else f"exit status {done.returncode}")

    def start(self) -> str:
        self.count += 1
        name = f"bench-{self.count}"
        bundle = self.base / name
        bundle.mkdir()
        (bundle / "config.json").write_text(json.dumps(_spec(self.root, self.ids)))
        self._call("run", "--detach", "--bundle", str(bundle), name)
        self.live.append(name)
        return name

    def exec_true(self, name: str) -> None:
        self._call("exec", name, "true")

    def close(self) -> None:
        for name in self.live:
            with contextlib.suppress(RuntimeError):
                self._call("delete", "--force", name)


def _timed(call: Callable[[], object]) -> float:
    start = timer()
    call()
    return timer() - start


def _oci_execs(oci: _Oci, name: str, execs: int) -> float:
    return median([_timed(functools.partial(oci.exec_true, name)) for _ in range(execs)])


def run(rounds: int, execs: int) -> Report:
    report = Report("containment: this runtime (bwrap) against OCI runtimes", rounds)
    clock = VirtualClock()
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory(dir=public_temp()) as base:
        Path(base).chmod(0o711)  # an OCI container's root (the range's first id) passes through
        runtime = ProcessRuntime(base=Path(base) / "fake")
        ids = runtime.ids or idmap.host_range()
        made = []

        def bwrap_start() -> float:
            machine = runtime.new_sandbox(f"s{len(made)}")
            made.append(machine)
            _ = machine.rootfs  # its disk and image, outside the measurement
            start = timer()
            loop.run_until_complete(
                machine.runner(clock).run(["true"], on_stdout=_nothing, on_stderr=_nothing)
            )
            return timer() - start

        def bwrap_exec() -> float:
            runner = made[0].runner(clock)

            def one() -> None:
                loop.run_until_complete(
                    runner.run(["true"], on_stdout=_nothing, on_stderr=_nothing)
                )

            return median([_timed(one) for _ in range(execs)])

        variants: dict[str, Callable[[], float]] = {"bwrap start": bwrap_start}
        ocis: list[_Oci] = []
        # An OCI bundle's root: the host's, bound on a directory of its own (pivot_root
        # refuses "/" itself); unbound at the end.
        oci_root = Path(base) / "rootfs"
        oci_root.mkdir()
        bound = shutil.which("runc") or shutil.which("crun")
        if bound:
            subprocess.run(["mount", "--bind", "/", str(oci_root)], check=True)
        for program in ("runc", "crun"):
            found = shutil.which(program)
            if found is None:
                report.add(f"{program}", 0, "", f"not installed: apt-get install {program}")
                continue
            oci = _Oci(found, Path(base) / program, ids, oci_root)
            (Path(base) / program).mkdir()
            try:
                first = oci.start()
            except RuntimeError as exc:
                report.add(f"{program}", 0, "", f"cannot run here: {exc}")
                continue
            ocis.append(oci)
            variants[f"{program} start"] = functools.partial(_timed, oci.start)
            variants[f"{program} exec true"] = functools.partial(_oci_execs, oci, first, execs)
        try:
            bwrap_start()  # the image and the copy of bwrap, once, outside the measurement
            variants["bwrap exec true"] = bwrap_exec
            samples = interleave(variants, rounds)
        finally:
            for oci in ocis:
                oci.close()
            if bound:
                subprocess.run(["umount", "-l", str(oci_root)], check=False)
            runtime.close()
            loop.close()
    for name, values in samples.items():
        report.add(name, median(values) * 1e3, "ms")
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=5)
    execs = args.scale.pick(full=20, smoke=2)
    return finish(run(args.rounds, execs), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
