"""``python -m fake_server serve``: prints the URL first, serves, exits 0 on SIGINT."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import httpx
import pytest

from fake_server.__main__ import main


def test_serve_prints_url_serves_and_stops_on_sigint() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--api-key", "k-123"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        _exercise(process)


def _exercise(process: subprocess.Popen[str]) -> None:
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/v1")
        assert process.stdout.readline().strip() == "api key: k-123"
        assert process.stdout.readline().strip() == "runtime: process"  # auto: bwrap runs here
        origin = url.removesuffix("/v1")
        assert httpx.get(origin + "/healthz").json() == {"status": "success", "data": {"up": True}}
        whoami = httpx.get(url + "/whoami", headers={"X-Api-Key": "k-123"})
        assert whoami.status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None
    assert process.stderr.read() == ""


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rate-limit", "fast"], "argument --rate-limit: must be a positive integer or 'off'"),
        (["--port", "70000"], "argument --port: must be an integer 0-65535"),
        (["--api-key", ""], "argument --api-key: must be 1-512 printable characters"),
        (["--transitions", "slow"], "argument --transitions: invalid choice: 'slow'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_flags_are_usage_errors(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_flag_in_a_subprocess_exits_2_without_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "fake_server", "serve", "--rate-limit", "fast"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.endswith(
        "error: argument --rate-limit: must be a positive integer or 'off'\n"
    )


def test_port_in_use_is_one_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "fake_server", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    assert result.stderr == (
        f"createos-fake: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )
    assert result.stdout == ""


def test_serve_asking_for_an_unavailable_process_runtime_says_why_and_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fake_server.runtime.process import bwrap

    monkeypatch.setattr(bwrap, "bwrap_path", lambda: "/nonexistent/bwrap")
    assert main(["serve", "--port", "0", "--runtime", "process"]) == 1
    assert capsys.readouterr().err == (
        "createos-fake: the process runtime cannot run here: bwrap cannot start: "
        f"No such file or directory. {bwrap.HELP}\n"
    )


def test_serve_auto_falls_back_to_bashkit_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_server.__main__ import _runtime
    from fake_server.runtime.process import bwrap

    monkeypatch.setattr(bwrap, "bwrap_path", lambda: "/nonexistent/bwrap")
    assert _runtime("auto") == (
        "bashkit",
        "runtime: bashkit (the process runtime cannot run here: bwrap cannot start: "
        "No such file or directory)",
    )
    assert _runtime("bashkit") == ("bashkit", "runtime: bashkit")
