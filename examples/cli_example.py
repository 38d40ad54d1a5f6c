"""`createos-fake serve` in a subprocess on a free port, driven by a shell script with curl."""

import pathlib
import shutil
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).with_name("curl_client.sh")


@pytest.fixture
def served_fake():
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--quiet"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        exports = {}
        while not exports.get("CREATEOS_API_KEY"):  # the lines to paste into a shell
            line = server.stdout.readline()
            assert line, "createos-fake serve exited"
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").strip().partition("=")
                exports[name] = value
        origin = exports["CREATEOS_SANDBOX_BASE_URL"]  # http://127.0.0.1:PORT
        yield origin + "/v1", exports["CREATEOS_API_KEY"]
    finally:
        server.terminate()
        assert server.wait(timeout=10) == 0
        server.stdout.close()


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_curl_client(served_fake):
    api_url, api_key = served_fake
    done = subprocess.run(
        ["sh", str(SCRIPT), api_url, api_key], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "stdout: hello from curl\\n"
    assert lines[1].startswith("destroyed sb-")
