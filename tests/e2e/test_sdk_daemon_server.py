"""The Python SDK's ingress example, started as the service's docs start servers: by exec,
daemonised (``nohup setsid … >log 2>&1 &``), bound to ``0.0.0.0``, reached on its preview URL.

On the process runtime an exec returns once its command exited and its pipes closed, and a
detached daemon lives on until the sandbox goes (TS ``docs/tutorial.md`` step 5,
``docs/how-to/expose-a-service.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from createos import CreateSandboxRequest

from fake_server import tls_context

if TYPE_CHECKING:
    from createos import Client

#: Real programs in a real sandbox: in the reliability step, keeping the main suite fast.
pytestmark = [pytest.mark.reliability, pytest.mark.createos(runtime="process")]

#: Only the server is backgrounded: ``cd DIR && nohup … &`` would background a subshell that
#: keeps the exec's pipes open, and the exec would (rightly) never return.
SERVER = (
    "nohup setsid python3 -m http.server 8080 --bind 0.0.0.0 --directory /srv/site"
    " >/tmp/srv.log 2>&1 &"
)


def test_a_daemonised_server_answers_on_its_preview_url(createos_sdk: Client) -> None:
    sandbox = createos_sdk.create_sandbox(
        CreateSandboxRequest(shape="s-1vcpu-1gb", rootfs="devbox:1", ingress_enabled=True)
    )
    try:
        sandbox.shell("mkdir -p /srv/site && echo hello from the daemon > /srv/site/index.html")
        started = sandbox.shell(SERVER).result
        assert (started.exit_code, started.standard_output) == (0, "")
        sandbox.wait_for_port(8080)
        reply = httpx.get(sandbox.preview_url(8080), verify=tls_context(), timeout=30)
        assert (reply.status_code, reply.text) == (200, "hello from the daemon\n")
        listed = sandbox.shell("ps -eo args").result.standard_output
        assert SERVER.split(" >")[0].removeprefix("nohup setsid ") in listed.splitlines()
    finally:
        sandbox.destroy()


def test_a_server_bound_to_loopback_is_not_reached_by_ingress(createos_sdk: Client) -> None:
    """As on the service: ingress goes to eth0, so a 127.0.0.1 server gets the empty port's 502
    even though a probe from inside the sandbox finds it listening."""
    sandbox = createos_sdk.create_sandbox(
        CreateSandboxRequest(shape="s-1vcpu-1gb", ingress_enabled=True)
    )
    try:
        loopback = SERVER.replace("0.0.0.0", "127.0.0.1")
        assert sandbox.shell(f"mkdir -p /srv/site; {loopback}").result.exit_code == 0
        sandbox.wait_for_port(8080)
        reply = httpx.get(sandbox.preview_url(8080), verify=tls_context(), timeout=30)
        assert reply.status_code == 502
    finally:
        sandbox.destroy()
