"""``serve`` for CI: keys from the environment, ``--print-env FILE``, exit 0 on SIGTERM."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server.__main__ import build_parser, env_lines, keys_from_environment
from fake_server.server import FakeCreateOS
from tests.fake_server.cli.test_cli import STOPPED, _read_help

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = pytest.mark.reliability

if TYPE_CHECKING:
    from pathlib import Path


def test_keys_from_the_environment_and_print_env(tmp_path: Path) -> None:
    env_file = tmp_path / "createos.env"
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--quiet"]
    command += ["--runtime", "bashkit", "--print-env", str(env_file)]
    environ = {
        **os.environ,
        "CREATEOS_FAKE_API_KEY": "cos_live_ci",
        "CREATEOS_FAKE_CONTROL_KEY": "cos_fake_ci",
    }
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ
    ) as process:
        try:
            lines = _read_help(process)
            origin = lines[0].split()[2]
            assert "export CREATEOS_API_KEY=cos_live_ci" in lines
            assert "export CREATEOS_SANDBOX_API_KEY=cos_live_ci" in lines
            assert lines[-1] == "control key: cos_fake_ci"
            # The file is written before the start-up lines are printed.
            assert process.stdout is not None
            assert process.stdout.readline() == "\n"
            assert env_file.read_text() == (
                f"export CREATEOS_SANDBOX_BASE_URL={origin}\n"
                "export CREATEOS_API_KEY=cos_live_ci\n"
                "export CREATEOS_SANDBOX_API_KEY=cos_live_ci\n"
                "export CREATEOS_FAKE_CONTROL_KEY=cos_fake_ci\n"
            )
            assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
            with httpx.Client(base_url=origin) as client:
                assert client.get("/readyz").status_code == 200
                whoami = client.get("/v1/whoami", headers={"X-Api-Key": "cos_live_ci"})
                assert whoami.status_code == 200
                created = client.post(
                    "/v1/sandboxes",
                    json={"shape": "s-1vcpu-1gb"},
                    headers={"X-Api-Key": "cos_live_ci"},
                )
                assert created.status_code == 200
                state = client.get("/_fake/state", headers={"X-Fake-Control-Key": "cos_fake_ci"})
                assert state.status_code == 200
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.stdout.read() == STOPPED.format(signal="SIGTERM")
        assert process.stderr is not None
        assert process.stderr.read() == ""


def test_flags_win_over_the_environment() -> None:
    parser = build_parser()
    args = parser.parse_args(["serve", "--api-key", "flag-key"])
    keys_from_environment(parser, args, {"CREATEOS_FAKE_API_KEY": "env-key"})
    assert (args.api_key, args.control_key) == ("flag-key", None)
    keys_from_environment(parser, args, {"CREATEOS_FAKE_CONTROL_KEY": "env-control"})
    assert args.control_key == "env-control"


@pytest.mark.parametrize("name", ["CREATEOS_FAKE_API_KEY", "CREATEOS_FAKE_CONTROL_KEY"])
def test_a_bad_key_variable_is_a_usage_error_naming_it(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    args = parser.parse_args(["serve"])
    with pytest.raises(SystemExit) as exited:
        keys_from_environment(parser, args, {name: " spaced secret "})
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(f"error: ${name}: must be 1-512 printable characters, no outer spaces\n")
    assert "secret" not in err


def test_env_lines_quote_what_the_shell_would_split() -> None:
    fake = FakeCreateOS(api_key="key with space", control_key="ctl")
    try:
        assert env_lines(fake).splitlines()[1:3] == [
            "export CREATEOS_API_KEY='key with space'",
            "export CREATEOS_SANDBOX_API_KEY='key with space'",
        ]
    finally:
        fake.runtimes.close()


def test_an_unwritable_print_env_file_stops_serve(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "createos.env"
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--quiet"]
    command += ["--runtime", "bashkit", "--print-env", str(target)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (
        f"createos-fake: cannot write --print-env {target}: No such file or directory\n"
    )
    assert list(tmp_path.iterdir()) == []
