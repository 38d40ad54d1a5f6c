"""``python -m tests.security._watcher ORIGIN PID INTERVAL``: poll ``ORIGIN/readyz`` every
INTERVAL seconds, and sample process PID's resident set and open descriptors at each poll,
until stdin closes (and once more then); one JSON line per poll on stdout.

A process of its own, so the test's own work (decoding a 10 MB JSON reply holds the GIL) never
delays a poll: what it measures is the fake.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import httpx

from tests.security._exhaust import usage


def main(origin: str, pid: int, interval: float) -> None:
    stop = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    with httpx.Client(base_url=origin, timeout=1.0) as client:
        while True:  # once more after stdin closes: a poll after the attack too
            last = stop.is_set()
            now = usage(pid)
            started = time.monotonic()
            try:
                reply = client.get("/readyz")
                problem = "" if reply.status_code == 200 else f"answered {reply.status_code}"
            except httpx.HTTPError as exc:
                waited = time.monotonic() - started
                problem = f"{type(exc).__name__} after {waited:.2f} s"
            line = {"problem": problem, "rss": now.rss, "fds": now.fds}
            print(json.dumps(line), flush=True)
            if last:
                return
            stop.wait(interval)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
