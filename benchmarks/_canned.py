"""The floor for a provider lifecycle: canned CreateOS answers through ``httpx.MockTransport``.

No sockets, no shell, no state machine: just enough state (status per sandbox, uploaded files)
for the provider's lifecycle to succeed, so the fake-backed lifecycle can be compared with the
cheapest thing that still runs the provider's own code path end to end.

The provider takes it through its public seam, ``CreateosProvider(transport=...)``.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from typing import TYPE_CHECKING, Any

import httpx

from fake_server.clock import EXCHANGE_HEADER

if TYPE_CHECKING:
    from fake_server import Clock

__all__ = ["CANNED_OUTPUT", "CannedApi"]

#: What every canned process prints; the benchmark's command prints the same on the fake.
CANNED_OUTPUT = "ok\n"

_SANDBOX = re.compile(r"^/v1/sandboxes/(?P<id>[^/]+)(?P<rest>/.*)?$")


def _ok(data: dict[str, Any], status: int = 200) -> httpx.Response:
    return httpx.Response(status, json={"status": "success", "data": data})


class CannedApi:
    """A ``MockTransport`` handler answering the calls one lease lifecycle makes.

    Like the fake, it reports requests and replies to ``clock`` (``request_arrived``,
    ``response_sent``): a virtual clock otherwise counts every request as on the wire until the
    provider closes its exchange, and will not jump over the provider's polling sleeps.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock
        self._ids = itertools.count(1)
        self.status: dict[str, str] = {}
        self.files: dict[tuple[str, str], bytes] = {}
        self.calls = 0

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        exchange = request.headers.get(EXCHANGE_HEADER)
        if self._clock is not None:
            self._clock.request_arrived(exchange)
        try:
            return self._handle(request)
        finally:
            if self._clock is not None:
                self._clock.response_sent(exchange)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        method, path = request.method, request.url.path
        if method == "POST" and path == "/v1/sandboxes":
            sandbox_id = f"sb-canned{next(self._ids):020d}"
            self.status[sandbox_id] = "running"
            return _ok({"id": sandbox_id, "status": "running"})  # synchronous create
        match = _SANDBOX.match(path)
        if match is None or match["id"] not in self.status:
            return httpx.Response(404, json={"status": "fail", "data": {"id": "not found"}})
        return self._sandbox(request, match["id"], match["rest"] or "")

    def _sandbox(self, request: httpx.Request, sandbox_id: str, rest: str) -> httpx.Response:
        method = request.method
        if rest == "":
            if method == "DELETE":
                del self.status[sandbox_id]
                return _ok({"id": sandbox_id, "status": "destroying"})
            return _ok({"id": sandbox_id, "status": self.status[sandbox_id]})
        if rest in ("/pause", "/resume"):
            self.status[sandbox_id] = "paused" if rest == "/pause" else "running"
            return _ok({"id": sandbox_id, "status": rest[1:] + "ing"}, 202)
        if rest == "/files":
            key = (sandbox_id, request.url.params["path"])
            if method == "PUT":
                self.files[key] = request.read()
                return _ok({"path": key[1], "bytes": len(self.files[key])})
            return httpx.Response(200, content=self.files[key])
        if rest == "/exec":
            return self._exec(sandbox_id, json.loads(request.read()))
        return self._process(request, rest)

    def _exec(self, sandbox_id: str, body: dict[str, Any]) -> httpx.Response:
        stdout = ""
        if body.get("cmd") == "/bin/cat":
            stdout = self.files.get((sandbox_id, body["args"][-1]), b"").decode()
        return _ok({"result": {"exit_code": 0, "stdout": stdout, "stderr": ""}, "exec_ms": 1})

    def _process(self, request: httpx.Request, rest: str) -> httpx.Response:
        if rest == "/processes":
            return _ok({"process_id": f"proc-canned{next(self._ids)}", "state": "running"}, 201)
        if rest.endswith("/stdin/close"):
            return _ok({})
        if rest.endswith("/connect"):
            data = base64.b64encode(CANNED_OUTPUT.encode()).decode()
            frames = [
                {"type": "data", "seq": 1, "stream": "stdout", "data_base64": data},
                {"type": "exit", "exit_code": 0},
            ]
            body = "".join(json.dumps(frame) + "\n" for frame in frames)
            return httpx.Response(
                200, content=body.encode(), headers={"Content-Type": "application/x-ndjson"}
            )
        if request.method == "DELETE":
            return _ok({"tree_exited": True})
        return httpx.Response(404, json={"status": "fail", "data": {"path": "unknown"}})
