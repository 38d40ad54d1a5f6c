"""A page's `createos-fake serve` that runs until Ctrl-C, run for real beside the page's blocks.

The block starts in the background, in a process group of its own (as a shell's foreground
job), with its output in a file. It counts as started once it printed its start-up lines
(they end with ``control key:``) and ``/readyz`` answers 200 at the address it printed. The
page's later blocks run beside it; at the end of the page it gets SIGINT, as Ctrl-C sends it,
and must exit 0 within ``STOP_WITHIN`` seconds.

A page's ``--port 8080`` (or no ``--port``) becomes ``--port 0`` (a free port the kernel picks,
read from the address it prints), and ``127.0.0.1:8080`` in the page's later blocks that port,
so two runs on one machine never collide; ``HOME`` is the page's project directory, so
``~/...`` state stays inside it, while the machine's cache of built images (``createos-fake
image``: devbox:1's tree, bun) stays the machine's, as a user's serve finds it. The page's
later blocks get ``FAKE`` (its address), the variables it prints as ``export`` lines and
``CREATEOS_FAKE_CONTROL_KEY`` (its control key).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["START_WITHIN", "STOP_WITHIN", "Served", "start"]

START_WITHIN = 60.0
STOP_WITHIN = 10.0
_URL = re.compile(r"^createos-fake serving (http://\S+) ", re.MULTILINE)
_EXPORT = re.compile(r"^export (\w+)=(\S+)", re.MULTILINE)


@dataclass
class Served:
    """One running block: its process, output file and the port the page's 8080 became."""

    process: subprocess.Popen[bytes]
    output: Path
    port: int = 0
    url: str = ""
    exports: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def localise(self, script: str) -> str:
        """A later block of the page, its ``127.0.0.1:8080`` pointing at this server."""
        return script.replace("127.0.0.1:8080", f"127.0.0.1:{self.port}")

    def stop(self) -> str | None:
        """Ctrl-C; why it did not stop cleanly, or None."""
        if self.process.poll() is not None:
            return f"exited {self.process.returncode} before the page ended\n{self.text()}"
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            code = self.process.wait(timeout=STOP_WITHIN)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            return f"still running {STOP_WITHIN:.0f} s after SIGINT\n{self.text()}"
        return None if code == 0 else f"exited {code} after SIGINT\n{self.text()}"


def _on_free_port(script: str) -> str:
    if re.search(r"--port[ =]\d+", script):
        return re.sub(r"--port([ =])\d+", r"--port\g<1>0", script)
    return script.replace("createos-fake serve", "createos-fake serve --port 0", 1)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def _machine_cache(env: dict[str, str]) -> str:
    """The cache directory of whoever runs the docs (where ``createos-fake image`` built)."""
    return env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def start(script: str, project: Path, env: dict[str, str], number: int) -> Served:
    """Start the block; return once it serves (or raise, having stopped it)."""
    output = project / f".serve-{number}.log"
    with output.open("wb") as sink:
        process = subprocess.Popen(
            ["bash", "-e", "-c", _on_free_port(script)],
            cwd=project,
            env={**env, "HOME": str(project), "XDG_CACHE_HOME": _machine_cache(env)},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = Served(process, output)
    deadline = time.monotonic() + START_WITHIN
    while time.monotonic() < deadline and process.poll() is None:
        text = served.text()
        found = _URL.search(text)
        if found and "\ncontrol key: " in text and _ready(found.group(1)):
            served.url = found.group(1)
            served.port = int(served.url.rpartition(":")[2])
            served.exports = dict(_EXPORT.findall(text))
            served.exports["FAKE"] = served.url
            served.exports["CREATEOS_FAKE_CONTROL_KEY"] = text.split("\ncontrol key: ")[1].split()[
                0
            ]
            return served
        time.sleep(0.1)
    problem = served.stop() or "stopped cleanly"
    raise AssertionError(f"the serve block did not start within {START_WITHIN:.0f} s: {problem}")
