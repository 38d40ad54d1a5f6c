"""``python -m tests.security._stall HOST PORT``: hold stalled connections for a test.

Reads one line, a JSON list of payloads (latin-1 text), opens one connection per payload and
sends it (``_exhaust.open_stalled``), prints how many it holds, then holds them until its
input ends.
"""

from __future__ import annotations

import json
import sys

from tests.security._exhaust import open_stalled


def main(host: str, port: str) -> None:
    payloads = [text.encode("latin-1") for text in json.loads(sys.stdin.readline())]
    opened = open_stalled((host, int(port)), payloads)
    print(len(opened), flush=True)
    sys.stdin.read()  # until the test closes our input
    for sock in opened:
        sock.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
