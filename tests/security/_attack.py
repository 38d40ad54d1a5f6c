"""What the security suite's modules share: a ``serve`` under attack and a client of it.

``Target`` wraps one ``createos-fake serve`` subprocess: its account and control clients, and
``sh()`` running a script in a sandbox through the exec API as any client would. ``ready()``
says whether ``/readyz`` answers within a second, the promise every attack must keep.
"""

from __future__ import annotations

import contextlib
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from benchmarks._serve import Serve, start_serve

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Target", "serving"]

#: One TLS context for every client of the suite (building one per client costs ~25 ms).
_TLS = ssl.create_default_context()


@dataclass(slots=True)
class Target:
    """A running ``serve`` and clients of it."""

    serve: Serve
    api: httpx.Client
    control: httpx.Client
    sandboxes: list[str] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return self.serve.origin

    def ready(self, timeout: float = 1.0) -> bool:
        """Whether ``/readyz`` answers 200 within ``timeout`` real seconds."""
        try:
            reply = self.api.get("/readyz", timeout=timeout)
        except httpx.HTTPError:
            return False
        return reply.status_code == 200

    def create(self, **fields: Any) -> str:
        """A new running sandbox's id (destroyed when the module's ``serve`` stops)."""
        body = {"shape": "s-1vcpu-1gb", "rootfs": "devbox:1", **fields}
        reply = self.api.post("/v1/sandboxes", json=body, timeout=60)
        assert reply.status_code in (200, 201), reply.text
        sandbox_id: str = reply.json()["data"]["id"]
        self.sandboxes.append(sandbox_id)
        return sandbox_id

    def exec(self, sandbox_id: str, script: str, *, timeout: float = 60) -> dict[str, Any]:
        """``bash -c script`` through the exec API: the result (exit code, stdout, stderr)."""
        reply = self.api.post(
            f"/v1/sandboxes/{sandbox_id}/exec",
            json={"cmd": "bash", "args": ["-c", script]},
            timeout=timeout,
        )
        assert reply.status_code == 200, reply.text
        result: dict[str, Any] = reply.json()["data"]["result"]
        return result

    def sh(self, sandbox_id: str, script: str, *, timeout: float = 60) -> tuple[int, str]:
        """Exit code and stdout+stderr (joined in the shell, in order) of ``script``."""
        result = self.exec(sandbox_id, "exec 2>&1\n" + script, timeout=timeout)
        return int(result["exit_code"]), str(result.get("stdout", ""))


@contextlib.contextmanager
def serving(*flags: str, **how: Any) -> Iterator[Target]:
    """``createos-fake serve FLAGS`` and clients of it; stopped (and checked) at the end.
    ``how``: ``start_serve``'s keywords (another user's ``prefix`` and ``env``)."""
    serve = start_serve(*flags, **how)
    try:
        api = httpx.Client(
            base_url=serve.origin, headers={"X-Api-Key": serve.key}, verify=_TLS, timeout=30
        )
        control = httpx.Client(
            base_url=serve.origin,
            headers={"X-Fake-Control-Key": serve.control_key},
            verify=_TLS,
            timeout=30,
        )
        with api, control:
            target = Target(serve, api, control)
            yield target
            assert target.ready(), "serve stopped answering /readyz within 1 s"
    finally:
        serve.kill()
