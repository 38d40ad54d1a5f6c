"""``createos-fake serve | head -3``: a reader that is gone, or stops reading, changes nothing.

Before, once ``head`` exited, every request answered 500 (the request log's print raised
``BrokenPipeError``) and SIGINT and SIGTERM were ignored (so did the signal handler's); a
reader that stops reading blocked the event loop on a full pipe, every request and signal
with it.
"""

from __future__ import annotations

import fcntl
import io
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server.console import Console

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

#: Slow (subprocesses): in the reliability step, keeping the main suite fast.
pytestmark = pytest.mark.reliability

#: Real seconds a signal may take to stop serve.
STOP_BOUND = 3.0
#: Real seconds one request may take before the test fails instead of hanging.
REQUEST_BOUND = 5.0
#: fcntl's F_SETPIPE_SZ (Linux): the smallest pipe fills after a few log lines.
F_SETPIPE_SZ = 1031


def _serve(stderr: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--runtime", "bashkit"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr)


def _origin(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    first = process.stdout.readline().decode()
    assert first.startswith("createos-fake serving http://127.0.0.1:"), first
    return first.split()[2]


@pytest.fixture(name="served")
def _served() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The serve processes a test starts, killed if a test left one running."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


def _stops_within_bound(process: subprocess.Popen[bytes], sig: signal.Signals) -> float:
    started = time.monotonic()
    process.send_signal(sig)
    assert process.wait(timeout=STOP_BOUND) == 0  # TimeoutExpired names the hang
    return time.monotonic() - started


def _answers(origin: str, count: int) -> list[int]:
    """``count`` requests, each writing a log line: their statuses."""
    with httpx.Client(base_url=origin, timeout=REQUEST_BOUND) as client:
        return [client.get("/readyz", params={"n": str(n)}).status_code for n in range(count)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_reader_that_is_gone_changes_no_answer_and_no_stop(
    served: list[subprocess.Popen[bytes]], sig: signal.Signals
) -> None:
    """``serve | head -1``: both streams' readers gone after the first line; every answer is
    still a 200 and one signal stops it, exit 0."""
    process = _serve()
    served.append(process)
    origin = _origin(process)
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()
    process.stderr.close()
    assert _answers(origin, 20) == [200] * 20
    _stops_within_bound(process, sig)


def test_a_reader_that_stops_reading_changes_no_answer_and_no_stop(
    served: list[subprocess.Popen[bytes]],
) -> None:
    """A reader alive but not reading: the pipe fills, the log lines wait or are dropped, the
    answers and the stop do not wait."""
    process = _serve()
    served.append(process)
    assert process.stdout is not None
    fcntl.fcntl(process.stdout.fileno(), F_SETPIPE_SZ, 4096)
    origin = _origin(process)
    assert _answers(origin, 200) == [200] * 200  # about 8 KiB of log lines: twice the pipe
    _stops_within_bound(process, signal.SIGTERM)


def test_a_closed_stdout_at_start_is_no_reason_to_fail(
    served: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """``serve >&-``: nothing to print to, served all the same (the lines go nowhere)."""
    env = tmp_path / "env"
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--runtime", "bashkit"]
    process = subprocess.Popen(
        [*command, "--print-env", str(env)],
        stdout=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(1),  # the child starts with its stdout closed
    )
    served.append(process)
    deadline = time.monotonic() + REQUEST_BOUND * 2
    while not env.exists():  # written before the lines it would print
        assert process.poll() is None, "serve exited"
        assert time.monotonic() < deadline, "serve did not start"
        time.sleep(0.02)
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in env.read_text().splitlines()
    )
    assert _answers(exports["CREATEOS_SANDBOX_BASE_URL"], 3) == [200] * 3
    _stops_within_bound(process, signal.SIGINT)


def test_the_console_drops_lines_of_a_gone_stream_and_writes_the_others() -> None:
    """In-process: a stream without a descriptor is written directly; one that fails is
    dropped, never raising into the caller."""
    good = io.StringIO()

    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    console = Console(stdout=Gone(), stderr=good)
    console.out("lost")
    console.err("kept")
    console.out("lost too")
    console.close()
    assert good.getvalue() == "kept\n"
