"""``createos-fake serve`` stops promptly on SIGINT/SIGTERM, even while a command runs."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from fake_server import stopping
from tests.fake_server.cli.test_cli import STOPPED, _read_help

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = pytest.mark.reliability


def _running(argv0: str, arg: str) -> list[int]:
    """Pids whose command line is exactly ``argv0 arg`` (the sandbox's pid namespace is
    visible from here)."""
    wanted = f"{argv0}\0{arg}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_sigterm_stops_serve_at_once_while_an_exec_runs() -> None:
    """The exec of ``sleep 40`` is killed and answered (a complete reply, exit 137), serve
    says it is stopping, exits 0, and no sandbox process outlives it. (SIGINT takes the same
    path: ``test_cli`` stops serve with it.)"""
    sig = signal.SIGTERM
    seconds = f"40.{os.getpid()}"  # unique among tests running at the same time
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--quiet"]
    command += ["--runtime", "process", "--transitions", "immediate"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            lines = _read_help(process)
            origin = lines[0].split()[2]
            key = next(x for x in lines if x.startswith("export CREATEOS_API_KEY="))
            key = key.removeprefix("export CREATEOS_API_KEY=")
            with httpx.Client(base_url=origin, headers={"X-Api-Key": key}, timeout=30) as client:
                created = client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
                sandbox_id = created.json()["data"]["id"]
                replies: list[Any] = []
                exec_call = threading.Thread(
                    target=lambda: replies.append(
                        client.post(
                            f"/v1/sandboxes/{sandbox_id}/exec",
                            json={"cmd": "sleep", "args": [seconds]},
                        )
                    )
                )
                exec_call.start()
                try:
                    while not _running("sleep", seconds):
                        assert exec_call.is_alive()
                    process.send_signal(sig)
                    assert process.wait(timeout=10) == 0
                finally:
                    exec_call.join(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.stdout is not None
        assert process.stderr is not None
        assert process.stdout.read() == "\n" + STOPPED.format(signal=sig.name)
        assert process.stderr.read() == ""
    (reply,) = replies
    assert reply.status_code == 200
    assert reply.json()["data"]["result"] == {
        "exit_code": 137,
        "stdout": "",
        "stderr": "",
        "error": "command killed by SIGKILL",
    }
    assert _running("sleep", seconds) == []


@pytest.mark.asyncio
async def test_a_second_signal_exits_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the fake closes, a second signal leaves with 128 + its number, one line, no
    traceback (bubblewrap's --die-with-parent takes the sandboxes along)."""
    exited: list[int] = []
    gone = asyncio.Event()

    def fake_exit(status: int) -> None:
        exited.append(status)
        gone.set()

    monkeypatch.setattr(stopping, "_exit", fake_exit)
    said: list[str] = []
    with stopping.StopSignals(said.append) as signals:
        os.kill(os.getpid(), signal.SIGINT)
        await signals.stopping.wait()
        os.kill(os.getpid(), signal.SIGTERM)
        await gone.wait()
    assert exited == [128 + signal.SIGTERM]
    assert said == [
        "createos-fake: SIGINT: stopping (killing the sandboxes' processes; a second signal "
        "exits at once)",
        "createos-fake: second signal (SIGTERM): exiting now",
    ]
    assert signals.received is signal.SIGINT
