"""Networking of process-runtime sandboxes with real servers: one network namespace per
sandbox, preview URLs proxied into it, and nothing left once the fake is gone.

Real programs take real time (a Python server starts in ~100 ms), so these run in the
reliability step; every wait is bounded and waits on what a program does, never a duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from fake_server import (
    FakeCreateOS,
    TransitionPolicy,
    VirtualClock,
    tls_context,
)
from fake_server.http.handlers import ingress_proxy
from fake_server.runtime.process import ProcessMachine, ProcessRuntime
from tests._helpers import until
from tests.fake_server._process_runtime import api_sh

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = [pytest.mark.reliability, pytest.mark.asyncio]

#: A server for the cases ``http.server`` does not cover: POST echo, a chunked stream, and
#: a path whose handler never answers.
ECHO_SERVER = textwrap.dedent(
    """
    import http.server, sys, time

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            if self.headers.get("Transfer-Encoding") == "chunked":
                body = b""
                while (size := int(self.rfile.readline(), 16)):
                    body += self.rfile.read(size); self.rfile.readline()
                self.rfile.readline()
            else:
                body = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(201, "Made")
            self.send_header("X-Echo-Path", self.path)
            self.send_header("X-Got-Header", self.headers.get("X-Custom", ""))
            self.send_header("X-Got-Key", self.headers.get("X-Api-Key", ""))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/hang":
                time.sleep(3600)
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Set-Cookie", "a=1")
            self.send_header("Set-Cookie", "b=2")
            self.end_headers()
            for i in range(100):
                data = (f"line {i} " * 1000 + "\\n").encode()
                self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(data), data))
            self.wfile.write(b"0\\r\\n\\r\\n")

    http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Handler).serve_forever()
    """
)


async def new_sandbox(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", **fields})
    assert created.status_code == 200, created.text
    for _ in range(10):
        got = await client.get(f"/v1/sandboxes/{created.json()['data']['id']}")
        if got.json()["data"]["status"] == "running":
            data: dict[str, Any] = got.json()["data"]
            return data
    raise AssertionError("the sandbox never ran")


async def start(client: httpx.AsyncClient, sandbox_id: str, *argv: str) -> None:
    started = await client.post(
        f"/v1/sandboxes/{sandbox_id}/processes", json={"cmd": argv[0], "args": list(argv[1:])}
    )
    assert started.status_code == 201, started.text


async def listening(client: httpx.AsyncClient, url: str) -> None:
    """Wait until the preview URL stops answering 502 (the server is up)."""

    async def up() -> bool:
        return (await client.get(url)).status_code != 502

    await until(up)


async def released(inode: str) -> None:
    async def gone() -> bool:
        return not holders(inode)

    try:
        await until(gone, bound=10.0)
    except AssertionError:
        found = holders(inode)
        raise AssertionError(f"{inode} still held: {[(h, _cmdline(h)) for h in found]}") from None


def _cmdline(holder: str) -> str:
    pid = holder.split("/")[0]
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            cmd = handle.read().replace(b"\0", b" ").decode()[:60]
        with open(f"/proc/{pid}/stat") as handle:
            ppid = handle.read().rsplit(")", 1)[1].split()[1]
    except OSError:
        return "?"
    return f"{cmd} (parent {ppid}, test {os.getpid()})"


async def bandwidth(client: httpx.AsyncClient, sandbox_id: str) -> tuple[int, int]:
    data = (await client.get(f"/v1/sandboxes/{sandbox_id}/bandwidth")).json()["data"]
    return data["used_bytes"], data["ingress_bytes"]


async def test_http_server_is_reached_through_the_preview_url_and_by_other_execs(
    client: httpx.AsyncClient,
) -> None:
    sandbox = await new_sandbox(client, ingress_enabled=True)
    sid, template = sandbox["id"], sandbox["ingress_url_template"]
    page = b"<h1>hello from the sandbox</h1>\n"
    big = os.urandom(3 * 1024 * 1024)
    for path, data in (("/srv/www/index.html", page), ("/srv/www/big.bin", big)):
        put = await client.put(f"/v1/sandboxes/{sid}/files", params={"path": path}, content=data)
        assert put.status_code in (200, 201), put.text
    await start(client, sid, "python3", "-m", "http.server", "8080", "--directory", "/srv/www")
    url = template.replace("<port>", "8080")
    await listening(client, url)
    before = await bandwidth(client, sid)

    got = await client.get(url + "index.html?x=1")
    assert (got.status_code, got.content) == (200, page)
    assert got.headers["content-type"] == "text/html"
    assert got.headers["content-length"] == str(len(page))
    async with client.stream("GET", url + "big.bin") as streamed:
        assert streamed.status_code == 200
        assert b"".join([chunk async for chunk in streamed.aiter_raw()]) == big
    missing = await client.get(url + "nothing%20here")
    assert (missing.status_code, missing.reason_phrase) == (404, "File not found")

    used, received = await bandwidth(client, sid)
    assert used - before[0] >= len(big) + len(page)
    assert received > before[1]

    same = await api_sh(client, sid, "curl -s http://127.0.0.1:8080/index.html")
    assert same["stdout"] == page.decode()


async def test_post_chunked_streams_and_headers_pass_both_ways(
    client: httpx.AsyncClient,
) -> None:
    sandbox = await new_sandbox(client, ingress_enabled=True)
    sid, url = sandbox["id"], sandbox["ingress_url_template"].replace("<port>", "8081")
    put = await client.put(
        f"/v1/sandboxes/{sid}/files", params={"path": "/srv/echo.py"}, content=ECHO_SERVER.encode()
    )
    assert put.status_code in (200, 201), put.text
    await start(client, sid, "python3", "/srv/echo.py", "8081")
    await listening(client, url)

    body = os.urandom(200_000)
    posted = await client.post(
        url + "sub%20mit/x?a=b%20c", content=body, headers={"X-Custom": "yes", "X-Api-Key": "k"}
    )
    assert (posted.status_code, posted.reason_phrase, posted.content) == (201, "Made", body)
    assert (posted.headers["x-echo-path"], posted.headers["x-got-header"]) == (
        "/sub%20mit/x?a=b%20c",
        "yes",
    )
    assert posted.headers["x-got-key"] == ""  # account keys never reach the sandbox

    async def pieces() -> AsyncIterator[bytes]:
        for i in range(5):
            yield f"piece {i};".encode()

    chunked = await client.post(url + "chunks", content=pieces())
    assert chunked.content == b"piece 0;piece 1;piece 2;piece 3;piece 4;"

    streamed = await client.get(url + "stream")
    assert streamed.status_code == 200
    assert streamed.headers.get_list("set-cookie") == ["a=1", "b=2"]
    assert streamed.text == "".join(f"line {i} " * 1000 + "\n" for i in range(100))


async def test_a_server_that_never_answers_gets_a_504_after_the_real_timeout(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = await new_sandbox(client, ingress_enabled=True)
    sid, url = sandbox["id"], sandbox["ingress_url_template"].replace("<port>", "8081")
    await client.put(
        f"/v1/sandboxes/{sid}/files", params={"path": "/srv/echo.py"}, content=ECHO_SERVER.encode()
    )
    await start(client, sid, "python3", "/srv/echo.py", "8081")
    await listening(client, url)
    monkeypatch.setattr(ingress_proxy, "ANSWER_TIMEOUT", 0.2)
    hung = await client.get(url + "hang")
    assert hung.status_code == 504
    assert hung.json() == {
        "status": "error",
        "code": 504,
        "message": "the server on port 8081 in the sandbox did not answer within 0.2 s",
        "data": {"code": "gateway_timeout"},
    }


async def test_nothing_listening_is_a_clear_502_and_sandboxes_do_not_share_ports(
    client: httpx.AsyncClient,
) -> None:
    first = await new_sandbox(client, ingress_enabled=True)
    second = await new_sandbox(client, ingress_enabled=True)
    await start(client, first["id"], "python3", "-m", "http.server", "8080")
    await listening(client, first["ingress_url_template"].replace("<port>", "8080"))

    other = await client.get(second["ingress_url_template"].replace("<port>", "8080"))
    assert other.status_code == 502
    assert other.json() == {
        "status": "error",
        "code": 502,
        "message": "no server is listening on port 8080 in the sandbox",
        "data": {"code": "bad_gateway"},
    }
    reached = await api_sh(client, second["id"], "curl -sS http://127.0.0.1:8080/")
    assert reached["exit_code"] == 7  # couldn't connect: its own loopback
    await start(client, second["id"], "python3", "-m", "http.server", "8080")  # no collision
    await listening(client, second["ingress_url_template"].replace("<port>", "8080"))


async def test_paused_sandboxes_preview_is_502_and_answers_again_after_resume(
    client: httpx.AsyncClient,
) -> None:
    sandbox = await new_sandbox(client, ingress_enabled=True)
    sid, url = sandbox["id"], sandbox["ingress_url_template"].replace("<port>", "8080")
    await start(client, sid, "python3", "-m", "http.server", "8080")
    await listening(client, url)
    assert (await client.post(f"/v1/sandboxes/{sid}/pause")).status_code == 200
    paused = await client.get(url)
    assert (paused.status_code, paused.json()["message"]) == (
        502,
        "sandbox is paused; its preview URLs answer once it runs",
    )
    assert (await client.post(f"/v1/sandboxes/{sid}/resume")).status_code == 200
    await new_sandbox(client)  # lets the resume transition settle
    assert (await client.get(url)).status_code == 200


async def test_network_namespaces_go_with_the_fake_even_when_it_is_killed(
    tmp_path: Any,
) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from fake_server.runtime.process import ProcessRuntime

        async def main():
            runtime = ProcessRuntime(base=Path({str(tmp_path)!r}))
            machine = runtime.new_sandbox("sb")
            async def sink(data): print(data.decode().strip(), flush=True)
            await machine.runner(None).run(
                ["sh", "-c", "readlink /proc/self/ns/net; exec sleep 300"],
                on_stdout=sink, on_stderr=sink,
            )

        asyncio.run(main())
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=subprocess.PIPE, env=env, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(20):
            inode = (await proc.stdout.readline()).decode().strip()
        assert inode.startswith("net:[")
        assert holders(inode)
        proc.kill()
        await proc.wait()
        await released(inode)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


async def test_closing_the_fake_releases_every_namespace(client: httpx.AsyncClient) -> None:
    fake = FakeCreateOS(
        clock=VirtualClock(), transitions=TransitionPolicy.immediate(), runtime="process"
    )
    async with fake:
        async with httpx.AsyncClient(
            base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=30, verify=tls_context()
        ) as own:
            sandbox = await new_sandbox(own, ingress_enabled=True)
            await start(own, sandbox["id"], "sleep", "300")
            found = fake.sandbox(sandbox["id"]).machine
            assert isinstance(found, ProcessMachine)
            inode = found.net.inode
            assert holders(inode)
    await released(inode)


def holders(inode: str) -> list[str]:
    """Processes in the namespace ``inode`` and descriptors on it, anywhere on the host."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        links = [f"{pid}/ns/net"]
        with contextlib.suppress(OSError):
            links += [f"{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
        for link in links:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{link}") == inode:
                    found.append(link)
    return found


async def test_sandboxes_on_one_network_reach_each_other_by_member_ip_and_no_other(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    made = await client.post("/v1/networks", json={"name": "backend", "cidr": "10.77.0.0/24"})
    assert made.status_code == 201, made.text
    network_id = made.json()["data"]["id"]
    server = await new_sandbox(client, networks=[{"id": network_id}])
    peer, outsider = await new_sandbox(client), await new_sandbox(client)
    attached = await client.post(f"/v1/sandboxes/{peer['id']}/networks", json={"id": network_id})
    assert attached.status_code == 200, attached.text
    members = (await client.get(f"/v1/networks/{network_id}")).json()["data"]["members"]
    ips = {m["sandbox_id"]: m["ip"] for m in members}
    assert set(ips) == {server["id"], peer["id"]}
    server_ip = ips[server["id"]]

    await start(client, server["id"], "python3", "-m", "http.server", "8080", "--directory", "/etc")
    fetch = f"curl -s -m 5 http://{server_ip}:8080/hostname; echo $?"

    async def served() -> bool:
        return (await api_sh(client, peer["id"], fetch))["stdout"] == "sandbox\n0\n"

    await until(served)
    assert (await api_sh(client, outsider["id"], fetch))["stdout"] == "7\n"  # no route to it
    own = await api_sh(client, peer["id"], "ip -br addr show eth1 | tr -s ' '")
    assert own["stdout"].split()[2] == f"{ips[peer['id']]}/24"

    runtime = fake.runtimes.get("process")
    assert isinstance(runtime, ProcessRuntime)
    assert set(runtime.hubs) == {network_id}
    left = await client.delete(f"/v1/sandboxes/{peer['id']}/networks/{network_id}")
    assert left.status_code == 200, left.text
    assert (await api_sh(client, peer["id"], fetch))["stdout"] == "7\n"
    hub_inode = runtime.hubs[network_id].net.inode
    destroyed = await client.delete(f"/v1/sandboxes/{server['id']}")
    assert destroyed.status_code == 200, destroyed.text
    assert (await client.delete(f"/v1/networks/{network_id}")).status_code == 200
    assert runtime.hubs == {}
    await released(hub_inode)
