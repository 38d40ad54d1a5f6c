"""`createos-fake serve` in a subprocess on a free port, driven by a shell script with curl."""

import pathlib
import shutil
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).with_name("curl_client.sh")


@pytest.fixture
def served_fake():
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--seed", "1"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        api_url = server.stdout.readline().strip()  # http://127.0.0.1:PORT/v1
        api_key = server.stdout.readline().strip().removeprefix("api key: ")
        yield api_url, api_key
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
